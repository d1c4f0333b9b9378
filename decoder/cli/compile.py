"""`cky compile`: read a Moses rule table, optionally filter it to a test set, binarize it,
and write a grammar store."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


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
    parser.add_argument("--progress", action="store_true", help="show binarization progress")


def main(args: argparse.Namespace) -> int:
    from ..binarize import binarize
    from ..grammar import GrammarFormatError, feature_names_path, read_rules
    from ..store.compile import compile_grammar, save_store
    from ..store.filter import filter_rules, read_sentences
    from ..store.format import StoreError

    timings: dict[str, float] = {}
    started = time.perf_counter()
    try:
        rules = list(read_rules(args.rules))
    except (OSError, GrammarFormatError) as e:
        print(f"cky compile: {e}", file=sys.stderr)
        return 1
    timings["read"] = time.perf_counter() - started
    n_read = len(rules)

    feature_names = None
    names_path = feature_names_path(args.rules)
    if os.path.exists(names_path):
        with open(names_path, encoding="utf-8") as f:
            feature_names = json.load(f)

    if args.filter:
        started = time.perf_counter()
        rules = filter_rules(rules, read_sentences(args.filter))
        timings["filter"] = time.perf_counter() - started

    started = time.perf_counter()
    grammar = binarize(rules, strategy=args.strategy, seed=args.seed, non_binarizable=args.non_binarizable,
                       progress=args.progress)
    timings["binarize"] = time.perf_counter() - started

    started = time.perf_counter()
    try:
        compiled = compile_grammar(grammar, feature_names=feature_names, source_table=os.path.abspath(args.rules),
                                   filter_path=os.path.abspath(args.filter) if args.filter else None)
        timings["compile"] = time.perf_counter() - started
        started = time.perf_counter()
        save_store(compiled, args.store_dir)
        timings["write"] = time.perf_counter() - started
    except (ValueError, StoreError) as e:
        print(f"cky compile: {e}", file=sys.stderr)
        return 1

    meta = compiled.meta
    report = grammar.report
    size = sum(os.path.getsize(os.path.join(args.store_dir, f)) for f in os.listdir(args.store_dir))
    print(f"{args.rules}: {n_read:,} rules read" +
          (f", {len(rules):,} kept by the filter {args.filter}" if args.filter else ""))
    print(f"strategy {args.strategy}: {meta['n_rules']:,} binary rules "
          f"({report.get('virtual_nonterminals', 0):,} virtual symbols, "
          f"{report.get('non_binarizable', 0):,} non-binarizable, Q(G') = {report.get('cost', 0):,})")
    print(f"store {args.store_dir}: {meta['n_real_nonterminals']:,} labels, {meta['n_runs']:,} terminal runs, "
          f"{len(meta['feature_names'])} features, {size / 2**20:.1f} MiB")
    print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
    return 0
