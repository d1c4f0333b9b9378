"""`cky demo` (what `make demo` runs): build the small Bible system if needed and translate its test set.

Uses the full Bible build of `cky data bible-es-en` if it is there, else builds
(once) the small one; then extracts GHKM rules, compiles an icr-binarized grammar
store, writes the decoder config and translates the test set on all cores,
printing BLEU, chrF, edges per sentence and sentences per second. The config,
the translations (test.out) and the scores (demo.json) are in demo/ of the
data build.
"""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=None, help="decoding processes (default: all cores)")


def main(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    return run_demo(workers=args.workers)
