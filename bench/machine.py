"""What machine a benchmark ran on, for the JSON results of every bench module."""
from __future__ import annotations

import datetime
import os
import platform
import subprocess

import numpy as np

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                        platform.processor())
    except OSError:
        return platform.processor()


def machine_info() -> dict:
    """CPU, cores, memory, versions, load average (the machine is often shared), date and commit."""
    import Cython

    memory_gb = None
    try:
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPOSITORY,
                            capture_output=True, text=True).stdout.strip()
    return {"cpu": cpu_model(), "cpus": os.cpu_count(), "memory_gb": memory_gb, "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "cython": Cython.__version__,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": commit}
