"""Our decoder against Moses' per-verse scores already in bench/results/moses.json (no Moses run).

    python -m bench.moses_rerun_ours [--no-weight-pushing] [--rule-orders score estimate] [--pop-limits 100 300]
        [--table-limit-rank estimate] [--pop-count real --virtual-pop-limits 200 1000] [--sentences N]
        [--lm models/bible-es-en/build/lm.rest.bin] [--store STORE] [--search incremental] [--skip N]
        [--out OUT.json]

--results bench/results/moses_default100_verses100.json compares against Moses' default on 100 verses
(verses 41-100 run later with the same ini; bench/results/moses.md, "On 100 verses");
--results bench/results/moses_default100_verses200.json --skip 100 against it on the held-out verses
101-200 (bench/results/moses.md, "On 200 verses").

Decodes the verses of the last `bench.bench_moses` run with the same config (max_unary_depth 0, its
table limit) under other search settings, and counts per Moses run the verses where our model score
is at least Moses' (bench.bench_moses.compare, the same tolerance). Prints one line per setting and
appends the rows to bench/results/moses_rerun.json (or --out). Weight pushing is on unless --no-weight-pushing
(the decoder's default); with --pop-count real each pop limit runs with each --virtual-pop-limits
value (decoder.settings: pop_count, virtual_pop_limit). --search: the search algorithm (default cube;
pop_count real also for incremental).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

from bench.bench_moses import BUILD, RESULTS, compare, decode_ours
from bench.machine import machine_info
from decoder.settings import POP_COUNTS, RULE_ORDERS, SEARCH_ALGORITHMS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", default=os.path.join(RESULTS, "moses.json"))
    parser.add_argument("--source", default=os.path.join(BUILD, "test.es"))
    parser.add_argument("--weight-pushing", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--rule-orders", nargs="+", default=["score", "estimate"])
    parser.add_argument("--pop-limits", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--table-limit-rank", choices=RULE_ORDERS, default="score")
    parser.add_argument("--pop-count", choices=POP_COUNTS, default="all")
    parser.add_argument("--virtual-pop-limits", type=int, nargs="+", default=[1000])
    parser.add_argument("--skip", type=int, default=0,
                        help="skip the results' first N verses (e.g. those a setting was chosen on)")
    parser.add_argument("--sentences", type=int, default=0, help="only N verses after those skipped (0: all)")
    parser.add_argument("--lm", help="another LM than the config's, e.g. lm.rest.bin (its rest costs change the "
                                     "search, not the model: Moses' scores stay comparable)")
    parser.add_argument("--store", help="another store than the config's (e.g. the same rule table binarized "
                                        "by another strategy)")
    parser.add_argument("--search", choices=sorted(SEARCH_ALGORITHMS), default="cube")
    parser.add_argument("--out", default=os.path.join(RESULTS, "moses_rerun.json"),
                        help="the JSON list to append this run's rows to (default: %(default)s)")
    args = parser.parse_args(argv)

    from decoder.decoder import Decoder

    moses_results = json.loads(pathlib.Path(args.results).read_text())["demo"]
    first = moses_results.get("skip", 0)  # the results' first verse is verse first + 1 of --source
    if not 0 <= args.skip < moses_results["sentences"]:
        parser.error(f"--skip {args.skip}: the results have {moses_results['sentences']} verses")
    chosen = slice(args.skip, moses_results["sentences"] if not args.sentences
                   else min(moses_results["sentences"], args.skip + args.sentences))
    with open(args.source, encoding="utf-8") as f:
        verses = [line.rstrip("\n") for line in f][first:first + moses_results["sentences"]]
    verses = verses[chosen]
    table_limit = moses_results["ours"][0]["table_limit"]
    decoder = Decoder.from_config(moses_results["config"], max_unary_depth=0, table_limit=table_limit,
                                  weight_pushing=args.weight_pushing, table_limit_rank=args.table_limit_rank,
                                  pop_count=args.pop_count, search=args.search,
                                  **{name: path for name, path in (("lm", args.lm), ("store", args.store)) if path})
    rows = []
    virtual_limits = args.virtual_pop_limits if args.pop_count == "real" else [None]
    for rule_order in args.rule_orders:
        for pop_limit in args.pop_limits:
            for virtual_limit in virtual_limits:
                changes = {} if virtual_limit is None else {"virtual_pop_limit": virtual_limit}
                decoder.reconfigure(rule_order=rule_order, pop_limit=pop_limit, **changes)
                run = decode_ours(decoder, verses)
                scores = [verse["score"] for verse in run["verses"]]
                seconds = run["cpu_seconds"] / len(verses)
                row = {"search": args.search, "weight_pushing": args.weight_pushing, "rule_order": rule_order, "pop_limit": pop_limit,
                       "table_limit_rank": args.table_limit_rank, "pop_count": args.pop_count,
                       "virtual_pop_limit": virtual_limit, "lm": args.lm, "store": args.store,
                       "verses": len(verses), "skip": args.skip, "results": args.results,
                       "average_score": sum(scores) / len(scores), "cpu_seconds_per_verse": seconds,
                       "load_average": os.getloadavg()[0], "scores": scores, "against": {}}
                for name, moses in moses_results["moses"].items():
                    row["against"][name] = compare(scores, moses["scores"][chosen])
                rows.append(row)
                print("".join(f"{name} {os.path.basename(path)} " for name, path in (("lm", args.lm), ("store", args.store))
                              if path)
                      + ("" if args.search == "cube" else f"search {args.search} ")
                      + f"verses {args.skip + 1}-{args.skip + len(verses)} pushing {args.weight_pushing} {rule_order} rank {args.table_limit_rank} pop {pop_limit} "
                      f"count {args.pop_count}" + ("" if virtual_limit is None else f" virtual {virtual_limit}")
                      + f": average {row['average_score']:.4f}, {seconds:.3f} CPU s/verse, "
                      f"load {row['load_average']:.1f}; "
                      + "; ".join(f"{name}: {c['ours_at_least_moses']}/{len(scores)}"
                                  for name, c in row["against"].items()),
                      flush=True)
    out = args.out
    previous = json.loads(pathlib.Path(out).read_text()) if os.path.exists(out) else []
    previous.append({"machine": machine_info(), "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                     "rows": rows})
    with open(out, "w") as f:
        json.dump(previous, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
