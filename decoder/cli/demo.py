"""`cky demo` (what `make demo` runs): build the small Bible system if needed, translate its test set and
a few raw sentences.

Uses the full Bible build of `cky data bible-es-en` if it is there, else builds (once) the small one with
`cky data bible-es-en --small` (the pipeline of `cky train`: unfiltered rule table, icr store, the
shipped weights of the small system); then translates the test set on all cores, printing BLEU, chrF,
edges per sentence and sentences per second, and a few raw Spanish sentences. The scores and
translations are in demo/ of the build; the config is the build's config.toml.
"""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=None, help="decoding processes (default: all cores)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="the build to use (built there with `cky data bible-es-en --small --out DIR` when it "
                             "has no config.toml); default: decoder.data.build.default_out")


def main(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    return run_demo(workers=args.workers, out=args.out)
