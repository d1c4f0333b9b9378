"""One search at one pop limit over test verses, for a profiler: load, decode one verse, then the rest.

    python -m bench.profile_search --config models/bible-es-en/build/demo/config.toml \\
        --test models/bible-es-en/build/test.es --search incremental --pop-limit 100 --sentences 5

Prints the average model score, CPU seconds per verse (the decoding alone) and the search's counters per
verse. Load-independent instruction counts of the chart search alone (the cells' searches and their rule
groups, not loading), as in bench/results/incremental.md:

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*ChartSearch__build_cell*' \\
        --toggle-collect='*ChartSearch__build_goal*' python -m bench.profile_search ...
    perf record -p PID   # after the line "READY" (--ready)
"""
from __future__ import annotations

import argparse
import time

COUNTERS = ("items", "edges", "edges_proposed", "lm_queries_novel", "partial_edges_popped", "partial_edges_pushed",
            "complete_edges_scored", "partial_lm_novel", "flat_tails", "initial_edges", "initial_edges_at_corner",
            "trie_nodes")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--search", default="incremental")
    parser.add_argument("--pop-limit", type=int, default=100)
    parser.add_argument("--sentences", type=int, default=30)
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--lm", help="another LM file (e.g. lm.rest.bin, the LM with rest costs); default: the config's")
    parser.add_argument("--ready", action="store_true", help="print READY once loaded (to attach a profiler)")
    parser.add_argument("--engine-flag", action="append", default=[], metavar="NAME=INT",
                        help="set an engine flag (an attribute of the compiled search, e.g. split_queue=1); repeatable")
    args = parser.parse_args(argv)

    from decoder.decoder import Decoder
    from decoder.search.drivers import search_driver

    decoder = Decoder.from_config(args.config)
    settings = decoder.search_settings.replace(search=args.search)
    lm = decoder.lm
    if args.lm:
        from decoder.lm import LanguageModel

        lm = LanguageModel(args.lm)
    options = {}  # the engine's constructor arguments
    for flag in args.engine_flag:
        name, _, value = flag.partition("=")
        options[name] = int(value)
    try:
        driver = search_driver(settings.search)(decoder.store, lm, decoder.weights, decoder.space,
                                                settings.replace(pop_limit=args.pop_limit), engine_options=options)
    except TypeError as error:
        parser.error(f"--engine-flag: the {args.search} engine does not take it ({error})")
    decoder.chart = driver
    with open(args.test, encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.strip()][args.skip: args.skip + args.sentences]
    decoder.translate(sentences[0])  # first-use costs out of the timing
    if args.ready:
        print("READY", flush=True)
    totals = dict.fromkeys(COUNTERS, 0)
    score = 0.0
    started = time.process_time()
    for words in sentences:
        translation = decoder.translate(words)
        score += translation.score
        for key in COUNTERS:
            totals[key] += translation.stats.get(key, 0)
    seconds = time.process_time() - started
    n = len(sentences)
    print(f"{args.search} pop limit {args.pop_limit}, {n} verses: score/verse {score / n:.4f}, "
          f"CPU s/verse {seconds / n:.4f}, " + ", ".join(f"{k} {v / n:.0f}" for k, v in totals.items()), flush=True)


if __name__ == "__main__":
    main()
