"""The `cky` command: one subcommand per stage of the pipeline.

Each subcommand lives in its own module, which defines `add_arguments(parser)`
and `main(args) -> int`. Modules are imported only when their subcommand runs,
so `cky binarize` does not pay for importing the decoder.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one-line help)
COMMANDS = {
    "data": ("decoder.data.cli", "build the Bible Spanish-English data (corpus, trees, alignments, LM)"),
    "extract": ("decoder.extract.cli", "extract GHKM string-to-tree rules from a parsed, aligned corpus"),
    "binarize": ("decoder.binarize.cli", "binarize a rule table with a chosen strategy"),
    "compile": ("decoder.store.cli", "binarize a rule table and compile it into a grammar store"),
    "translate": ("decoder.translate_cli", "translate sentences with the CKY decoder"),
    "tune": ("decoder.tune.cli", "tune feature weights with MERT"),
    "evaluate": ("decoder.evaluate", "score hypotheses against references (BLEU, chrF)"),
    "bench": ("bench.cli", "run the benchmark suite"),
}


def _import(module_name: str):
    if module_name.startswith("bench."):  # bench/ is a top-level directory of the repo, not installed
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return importlib.import_module(module_name)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cky", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            _import(module_name).add_arguments(sub_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS:
        command = None
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module = _import(COMMANDS[args.command][0])
    return int(module.main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
