"""Checks of an output path, made before a command's work starts (one home for cky translate, cky tune
and the config writer), and the durable replacement of a file (their checkpoints)."""
from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def durable_replacement(path: str, binary: bool = False):
    """A file to write in place of `path`: written beside it (path + ".tmp"), flushed to the disk, then
    renamed over it, so that `path` holds the old content or the new one, never part of either."""
    tmp = path + ".tmp"
    with open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8") as f:
        yield f
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
