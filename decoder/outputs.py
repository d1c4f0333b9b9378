"""Checks of an output path, made before a command's work starts (one home for cky translate, cky tune
and the config writer)."""
from __future__ import annotations

import os
import stat

from .errors import OutputError


def check_output_directory(path: str) -> None:
    """OutputError unless the directory `path` would be written into exists."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OutputError(path, f"cannot write it: the directory {directory} does not exist")


def is_stream(path: str) -> bool:
    """True for an existing path that is not a regular file (/dev/stdout, a FIFO, a device, a directory):
    it can be neither truncated, fsynced nor replaced by a new file."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False
