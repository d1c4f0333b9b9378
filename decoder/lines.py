"""The line contract of every text file the commands read: a line is a `\\n`-terminated record.

Files are read as bytes and split on b"\\n" only, so that `\\r`, NUL, U+2028 and
any other byte stay inside their line (Python's text mode would also split on
`\\r`, and str.splitlines on a dozen more characters). A last line without its
`\\n` is still a line. A UTF-8 byte order mark at the very start is dropped.
Each line is decoded as UTF-8 on its own, so that one bad line does not spoil
the others: `decode_lines` reports it and the caller decides (cky translate
gives it an empty output line; `read_lines` refuses the file).
"""
from __future__ import annotations

import os
import sys
from typing import IO

from .errors import InputError

BOM = b"\xef\xbb\xbf"


def split_lines(data: bytes) -> list[bytes]:
    """The records of a file's bytes, without their b"\\n" (and without a leading BOM)."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    if not data:
        return []
    lines = data.split(b"\n")
    if lines[-1] == b"":  # the file ends with a newline: no record after it
        lines.pop()
    return lines


def decode_lines(records: list[bytes]) -> tuple[list[str], dict[int, str]]:
    """(the text of each record, "" for a record that is not UTF-8; {0-based index: why not})."""
    texts, bad = [], {}
    for index, record in enumerate(records):
        try:
            texts.append(record.decode("utf-8"))
        except UnicodeDecodeError as error:
            texts.append("")
            bad[index] = f"invalid UTF-8 (byte {error.start + 1} is 0x{record[error.start]:02x})"
    return texts, bad


def read_records(path: str | os.PathLike | None, stdin: IO | None = None) -> list[bytes]:
    """The records of a file, or of standard input when path is None."""
    if path is None:
        stream = stdin if stdin is not None else sys.stdin
        data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
        if isinstance(data, str):  # a text stream without bytes underneath (a test's StringIO)
            data = data.encode("utf-8", "surrogateescape")
        return split_lines(data)
    with open(path, "rb") as f:
        return split_lines(f.read())


def read_lines(path: str | os.PathLike) -> list[str]:
    """The lines of a UTF-8 text file; a line that is not UTF-8 is an InputError naming file and line."""
    texts, bad = decode_lines(read_records(path))
    if bad:
        index = min(bad)
        raise InputError(path, bad[index], index + 1)
    return texts
