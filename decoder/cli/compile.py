"""`cky compile`: read a Moses rule table, optionally filter it to a test set, binarize it,
and write a grammar store."""
from __future__ import annotations

import argparse
import os
import sys

from .arguments import add_quiet


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..binarize import STRATEGIES

    parser.add_argument("rules", metavar="RULES", help="Moses syntax rule table (plain or .gz)")
    parser.add_argument("store_dir", metavar="STORE_DIR", help="directory to write the store to")
    parser.add_argument("--strategy", default="left", choices=STRATEGIES, help="binarization strategy (default: left)")
    parser.add_argument("--filter", metavar="TEST.txt", default=None,
                        help="keep only the rules whose source terminals occur in a sentence of this tokenized text")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="random seed of the random strategy (default: 0)")
    parser.add_argument("--non-binarizable", default="monolingual", choices=("monolingual", "drop"),
                        help="what to do with rules whose permutation is not binarizable (default: monolingual)")
    parser.add_argument("--features", metavar="NAME,...", default=None,
                        help="names of the score columns, comma-separated (default: RULES.features.json, "
                             "or RULES.gz.features.json for a decompressed table; required if neither exists)")
    add_quiet(parser, help="no binarization progress bar (shown only on a terminal)")
    parser.add_argument("--progress", action="store_true", help=argparse.SUPPRESS)  # (shown even off a terminal)


def main(args: argparse.Namespace) -> int:
    from ..store.build import build_store

    feature_names = args.features.split(",") if args.features is not None else None
    # a bad table, filter file or store directory: one line (decoder.cli.run)
    build = build_store(args.rules, args.store_dir, args.strategy, seed=args.seed, filter_path=args.filter,
                        feature_names=feature_names, non_binarizable=args.non_binarizable,
                        progress=args.progress or (not args.quiet and sys.stderr.isatty()))

    meta = build.meta
    report = build.report
    size = sum(os.path.getsize(os.path.join(args.store_dir, f)) for f in os.listdir(args.store_dir))
    print(f"{args.rules}: {build.n_read:,} rules read" +
          (f", {build.n_kept:,} kept by the filter {args.filter}" if args.filter else ""))
    print(f"strategy {args.strategy}: {meta['n_rules']:,} binary rules "
          f"({report.get('virtual_nonterminals', 0):,} virtual symbols, "
          f"{report.get('non_binarizable', 0):,} non-binarizable, Q(G') = {report.get('cost', 0):,})")
    print(f"store {args.store_dir}: {meta['n_real_nonterminals']:,} labels, {meta['n_runs']:,} terminal runs, "
          f"{len(meta['feature_names'])} features, {size / 2**20:.1f} MiB")
    print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in build.timings.items()))
    return 0
