"""Running `cky` in tests: in-process with bytes for stdin/stdout (fast), or as a subprocess
(tests/translate_runner.py, for signals and pipes). The model is test_decoder's tiny system."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr

from decoder.cli import main

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)


def run_cky(argv: list[str], stdin: bytes = b"") -> tuple[int, bytes, str]:
    """(exit code, stdout bytes, stderr text) of `cky ARGV` run in this process."""
    saved_in, saved_out = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    out = io.BytesIO()
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    err = io.StringIO()
    try:
        with redirect_stderr(err):
            try:
                code = main(argv)
            except KeyboardInterrupt:  # would stop the whole test session
                raise AssertionError(f"Ctrl-C escaped `cky {' '.join(argv)}`") from None
        sys.stdout.flush()
        return code, out.getvalue(), err.getvalue()
    finally:
        sys.stdin, sys.stdout = saved_in, saved_out


def start_cky(argv: list[str], env: dict | None = None, **popen) -> subprocess.Popen:
    """`cky ARGV` in a new session (so that a signal can go to its whole process group), with the
    decoder of tests/translate_runner.py."""
    environment = dict(os.environ, PYTHONPATH=REPO, **(env or {}))
    return subprocess.Popen([sys.executable, os.path.join(TESTS, "translate_runner.py"), *argv], env=environment,
                            start_new_session=True, **popen)
