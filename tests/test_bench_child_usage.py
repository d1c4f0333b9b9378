"""bench.child_usage: a command's own peak RSS and CPU seconds, not its parent's."""
import os
import sys

import pytest

from bench.child_usage import run_measured

ALLOCATE = "import sys\nx = bytearray(int(sys.argv[1]) * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"


def test_the_peak_is_the_commands_not_the_parents():
    parent = bytearray(400 * 2**20)  # this process's pages, touched: a plain wait4 child would report them
    for i in range(0, len(parent), 4096):
        parent[i] = 1
    small = run_measured([sys.executable, "-c", ALLOCATE, "20"])
    large = run_measured([sys.executable, "-c", ALLOCATE, "150"])
    assert small["exit_code"] == 0 and large["exit_code"] == 0
    assert 20 <= small["peak_rss_mb"] < 100
    assert 150 <= large["peak_rss_mb"] < 250
    del parent


def test_exit_code_streams_and_cpu_seconds(tmp_path):
    spin = "import sys, time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n" \
           "print('out'); sys.exit(3)"
    with open(tmp_path / "stdout", "w") as stdout:
        usage = run_measured([sys.executable, "-c", spin], stdout=stdout, cwd=tmp_path)
    assert usage["exit_code"] == 3
    assert usage["user_seconds"] + usage["system_seconds"] >= 0.25
    assert (tmp_path / "stdout").read_text() == "out\n"


def test_a_command_that_cannot_start_is_an_error(tmp_path):
    with open(os.devnull, "w") as devnull, pytest.raises(RuntimeError, match="no-such-program"):
        run_measured([os.path.join(tmp_path, "no-such-program")], stderr=devnull)
