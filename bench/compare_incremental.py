"""Model score against CPU seconds for `cube` and `incremental` search over pop limits.

    python -m bench.compare_incremental --store STORE --lm LM --test TEST.es [--glue GLUE]
        [--sentences 30] [--pop-limits 10 30 100 300 1000] [--out results.json]
    python -m bench.compare_incremental --system synthetic      # bench_decoder's synthetic system

Both searches decode the same sentences in this process with the same Decoder (store, LM,
weights, search space); for each (search, pop limit): average model score per sentence,
CPU seconds per sentence, edges proposed, LM queries (total and novel), and on how many
sentences it beats / ties the other search's score at the same pop limit.
"""
from __future__ import annotations

import argparse
import json
import time


def run(decoder, search, sentences, pop_limit):
    decoder.search = search
    search.configure(pop_limit=pop_limit)
    scores, totals = [], dict(edges_proposed=0, lm_queries=0, lm_queries_novel=0)
    cpu = time.process_time()
    for words in sentences:
        t = decoder.translate(words)
        scores.append(t.score)
        for key in totals:
            totals[key] += t.stats.get(key, 0)
    seconds = time.process_time() - cpu
    n = len(sentences)
    return scores, {"pop_limit": pop_limit, "sentences": n, "model_score_per_sentence": round(sum(scores) / n, 4),
                    "cpu_seconds_per_sentence": round(seconds / n, 4),
                    **{f"{k}_per_sentence": round(v / n, 1) for k, v in totals.items()}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=["synthetic"], default=None)
    parser.add_argument("--store")
    parser.add_argument("--lm")
    parser.add_argument("--test")
    parser.add_argument("--glue", default="builtin")
    parser.add_argument("--sentences", type=int, default=30)
    parser.add_argument("--pop-limits", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.system == "synthetic":
        from bench.bench_decoder import build_store, synthetic_system

        system = synthetic_system(print)
        with open(system["test"]) as f:
            lines = [line.strip() for line in f][: args.sentences]
        args.store, _ = build_store(system, "icr", lines, print)
        args.lm, args.test = system["lm"], system["test"]

    from decoder.decoder import Decoder
    from decoder.search.incremental import IncrementalDecoder

    decoder = Decoder(args.store, args.lm, glue=args.glue)
    cube = decoder.search
    incremental = IncrementalDecoder(decoder.store, decoder.lm, decoder.weights, decoder.space,
                                     pop_limit=100)
    incremental.configure(unary_pop_limit=decoder.settings["unary_pop_limit"])
    with open(args.test, encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.strip()][: args.sentences]
    rows = []
    for pop_limit in args.pop_limits:
        cube_scores, cube_row = run(decoder, cube, sentences, pop_limit)
        inc_scores, inc_row = run(decoder, incremental, sentences, pop_limit)
        better = sum(a > b + 1e-4 for a, b in zip(inc_scores, cube_scores))
        tied = sum(abs(a - b) <= 1e-4 for a, b in zip(inc_scores, cube_scores))
        for name, row in (("cube", cube_row), ("incremental", inc_row)):
            rows.append({"search": name, **row})
            print(json.dumps(rows[-1]), flush=True)
        print(f"pop limit {pop_limit}: incremental better on {better}, tied on {tied}, worse on "
              f"{len(sentences) - better - tied} of {len(sentences)} sentences", flush=True)
        rows[-1]["better_than_cube"] = better
        rows[-1]["tied_with_cube"] = tied
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"store": args.store, "lm": args.lm, "test": args.test, "runs": rows}, f, indent=1)


if __name__ == "__main__":
    main()
