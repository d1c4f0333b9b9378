"""A command's own CPU seconds and peak RSS, run as a child process.

Linux's ru_maxrss of a child also counts the memory of the process that started it: exec keeps the
higher of the old and the new address space's high-water mark, and the child's old address space is
its parent's (fork shares it page for page, vfork is it). A benchmark that holds a decoder of 1 GB
would see 1 GB as the peak of every command it times. So the command runs under a small launcher (a
fresh Python that holds nothing but this script), which waits for it and reports the command's rusage.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

LAUNCHER = r"""
import json, os, subprocess, sys
process = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(process.pid, 0)
process.returncode = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as f:
    json.dump({"exit_code": os.waitstatus_to_exitcode(status), "user_seconds": usage.ru_utime,
               "system_seconds": usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}, f)
"""


def run_measured(command: list[str], **popen_args) -> dict:
    """Run `command` (Popen's arguments: cwd, env, stdin, stdout, stderr, ...) and return its exit code
    and its own rusage: {"exit_code", "user_seconds", "system_seconds", "peak_rss_mb"}. The command's
    standard streams are the ones given here (the launcher passes them on)."""
    with tempfile.TemporaryDirectory(prefix="child-usage-") as work:
        report = os.path.join(work, "usage.json")
        launcher = subprocess.run([sys.executable, "-c", LAUNCHER, report, *command], **popen_args)
        if launcher.returncode != 0 or not os.path.exists(report):
            raise RuntimeError(f"could not run `{' '.join(command)}` (its launcher exited with {launcher.returncode})")
        with open(report) as f:
            return json.load(f)
