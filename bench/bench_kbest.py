"""Benchmark and check of the compiled k-best (decoder._ext._kbest) on the full Bible system.

    python -m bench.bench_kbest [--data models/bible-es-en/build] [--store DIR] [--lm FILE]
                                [--check-sentences 20] [--time-sentences 50] [--pop-limit 100] [--k 100]

1. Check (a bench check, not a unit test: the data is not in CI): on the first
   --check-sentences test verses, the compiled k-best equals the Python reference
   (decoder.search.kbest.LazyKBest): the same scores and texts, for unique and
   non-unique k-best lists of --k.
2. Time: on the first --time-sentences verses at --pop-limit, the CPU seconds of the
   1-best decode (search + best derivation read back) and of a --k-best unique list
   over the same chart (compiled k-best + read-back of every derivation, what
   Decoder.kbest adds). Goal (issue 16): the k-best list adds at most 20% of the
   1-best decode. Each verse is timed --repeats times and the fastest run is kept
   (the machine is shared; CPU time still varies with the other processes).

Writes bench/results/kbest.json (with the machine) and prints a summary.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from bench import RESULTS as RESULTS_DIR
from bench.machine import machine_info

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(RESULTS_DIR, "kbest.json")
DATA = os.path.join(REPOSITORY, "models", "bible-es-en", "build")


def fastest(function, repeats: int):
    """(CPU seconds of the fastest of `repeats` calls, the last call's result)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.process_time()
        result = function()
        best = min(best, time.process_time() - started)
    return best, result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DATA, help="the Bible data build (test.es, lm.bin, store)")
    parser.add_argument("--store", default=None, help="grammar store (default: DATA/store)")
    parser.add_argument("--lm", default=None, help="KenLM model (default: DATA/lm.bin)")
    parser.add_argument("--check-sentences", type=int, default=20)
    parser.add_argument("--time-sentences", type=int, default=50)
    parser.add_argument("--pop-limit", type=int, default=100)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args(argv)

    from decoder.decoder import Decoder

    store = args.store or os.path.join(args.data, "store")
    lm = args.lm or os.path.join(args.data, "lm.bin")
    with open(os.path.join(args.data, "test.es"), encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    decoder = Decoder(store=store, lm=lm, pop_limit=args.pop_limit)
    chart = decoder.chart
    sentences = [decoder._words(line)[1] for line in lines[:max(args.check_sentences, args.time_sentences)]]
    chart.best(chart.run(sentences[0]), sentences[0])  # first use reads the symbol names: not timed

    # 1. compiled == reference
    mismatches = []
    for index, words in enumerate(sentences[:args.check_sentences]):
        result = chart.run(words)
        for unique in (True, False):
            compiled = chart.kbest(result, words, args.k, unique=unique)
            reference = chart.kbest_reference(result, words, args.k, unique=unique)
            if ([(h.score, h.text) for h in compiled] != [(h.score, h.text) for h in reference]):
                mismatches.append({"sentence": index, "unique": unique})

    # 2. time: 1-best decode vs the k-best list over the same chart
    decode_seconds = kbest_seconds = 0.0
    per_verse, listed = [], 0
    for words in sentences[:args.time_sentences]:
        decode, (result, _) = fastest(lambda: (lambda r: (r, chart.best(r, words)))(chart.run(words)), args.repeats)
        kbest, hypotheses = fastest(lambda: chart.kbest(result, words, args.k, unique=True), args.repeats)
        decode_seconds += decode
        kbest_seconds += kbest
        listed += len(hypotheses)
        per_verse.append({"words": len(words), "decode_seconds": decode, "kbest_seconds": kbest,
                          "kbest_listed": len(hypotheses)})
    n = max(1, len(per_verse))
    summary = {
        "check": {"sentences": min(args.check_sentences, len(sentences)), "k": args.k,
                  "equal": not mismatches, "mismatches": mismatches},
        "timing": {"sentences": len(per_verse), "pop_limit": args.pop_limit, "k": args.k, "unique": True,
                   "repeats": args.repeats,
                   "decode_seconds_per_verse": decode_seconds / n, "kbest_seconds_per_verse": kbest_seconds / n,
                   "kbest_over_decode": kbest_seconds / decode_seconds if decode_seconds else None,
                   "translations_listed_per_verse": listed / n, "goal": "kbest_over_decode <= 0.20"},
        "per_verse": per_verse,
        "data": {"store": store, "lm": lm, "sentences": os.path.join(args.data, "test.es")},
        "machine": machine_info(),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
    timing = summary["timing"]
    print(f"check: compiled == reference on {summary['check']['sentences']} verses "
          f"(unique and not, k={args.k}): {'yes' if not mismatches else mismatches}")
    print(f"time on {timing['sentences']} verses, pop limit {args.pop_limit}: 1-best decode "
          f"{timing['decode_seconds_per_verse']:.4f} s/verse, {args.k}-best unique "
          f"{timing['kbest_seconds_per_verse']:.4f} s/verse ({100 * (timing['kbest_over_decode'] or 0):.1f}% "
          f"of the decode; {timing['translations_listed_per_verse']:.1f} translations listed per verse)")
    return summary


if __name__ == "__main__":
    main()
