"""The pytest configuration of pyproject.toml makes a leaked file fail the test that leaks it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LEAKS = '''
import gc
import subprocess
import sys


def test_an_unclosed_file(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("x")
    assert open(path).read() == "x"  # never closed
    gc.collect()


def test_an_unclosed_pipe():
    process = subprocess.Popen([sys.executable, "-c", "print(1)"], stdout=subprocess.PIPE)
    process.wait()
    del process  # its stdout is never closed
    gc.collect()


def test_a_closed_file(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("x")
    with open(path) as f:
        assert f.read() == "x"
    gc.collect()
'''


def test_an_unclosed_file_or_pipe_fails_the_test(tmp_path):
    shutil.copy(os.path.join(REPO, "pyproject.toml"), tmp_path / "pyproject.toml")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_leaks.py").write_text(LEAKS)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "tests"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    summary = {line.split(" ")[1].split("::")[-1]: line.split(" ")[0]
               for line in result.stdout.splitlines() if line.startswith(("PASSED ", "FAILED "))}
    assert summary == {"test_an_unclosed_file": "FAILED", "test_an_unclosed_pipe": "FAILED",
                       "test_a_closed_file": "PASSED"}, result.stdout + result.stderr
