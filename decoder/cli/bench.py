"""`cky bench`: the benchmark suite of bench/ (bench.cli), which lives in the repository, not
in the installed package: run it from the repository root (or as `python -m bench`)."""
from __future__ import annotations

import argparse
import importlib

from ..errors import UsageError


def _bench_cli():
    try:
        return importlib.import_module("bench.cli")
    except ModuleNotFoundError as error:
        if error.name not in ("bench", "bench.cli"):
            raise
        raise UsageError("the benchmark suite (bench/) is not importable here: run `python -m bench` "
                         "from the repository root") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    try:
        _bench_cli().add_arguments(parser)
    except UsageError:
        pass  # reported when the command runs


def main(args: argparse.Namespace) -> int:
    return _bench_cli().main(args)
