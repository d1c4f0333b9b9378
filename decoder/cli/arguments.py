"""argparse types shared by the commands: a value out of range is a usage error (exit 2) naming it."""
from __future__ import annotations

import argparse


def count(minimum: int, meaning: str = "", maximum: int | None = None):
    """An argparse type: an integer >= minimum (`meaning` says what the minimum means, e.g. " (0 means all)")
    and <= maximum if given."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}{meaning}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{value} is more than {maximum}")
        return value
    return parse


def non_negative(meaning: str = ""):
    """An argparse type: a finite number >= 0."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value >= 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text} is not a finite number >= 0{meaning}")
        return value
    return parse


def add_workers(parser, default: int | None = 1, minimum: int = 1, meaning: str = "", help: str = "",
                aliases: tuple = ()) -> None:
    """--workers N, the one name of "how many processes" on every command; `aliases` (older spellings such as
    --jobs) are accepted but hidden from --help."""
    parser.add_argument("--workers", type=count(minimum, meaning), default=default, metavar="N",
                        help=help or f"worker processes (default {default})")
    for alias in aliases:
        parser.add_argument(alias, dest="workers", type=count(minimum, meaning), help=argparse.SUPPRESS)


def add_quiet(parser, help: str = "no progress bar", aliases: tuple = ()) -> None:
    """--quiet, the one name of "no progress output" on every command; `aliases` (older spellings such as
    --no-progress) are accepted but hidden from --help."""
    parser.add_argument("--quiet", action="store_true", help=help)
    for alias in aliases:
        parser.add_argument(alias, dest="quiet", action="store_true", help=argparse.SUPPRESS)
