"""Where a pop threshold would cut (decoder.settings pop_threshold): per queue search of a cell (one unary round;
GOAL apart), the complete pops in order, and where the 1-best derivation's edges sit among them.

    python -m bench.pop_threshold_gaps --config models/bible-es-en/build/demo/config.toml \\
        --lm models/bible-es-en/build/lm.rest.bin --test models/bible-es-en/build/test.es \\
        --sentences 100 --pop-limit 300 --search incremental --out gaps.json

Decodes with no threshold; for each threshold T, over all queue searches: the share of complete pops the rule
would leave out (the pops from the first one more than T below the best before it: the same search without
the pops after that point, as if the cells below were the same) and the share of the 1-best derivation's
edges among them, and on how many verses at least one 1-best edge is among them; and the distribution of
each 1-best edge's gap below the best pop of its search, and of each search's spread (best pop - worst pop).
"""
from __future__ import annotations

import argparse
import json

import numpy as np

THRESHOLDS = (1, 2, 3, 4, 5, 6, 8, 10, 15)


def queue_searches(chart, goal_symbol, oov_rule):
    """{(cell, round, GOAL or not): [(edge, hypothesis score), ...] in pop order}: one edge per complete pop,
    appended in pop order; the hypothesis' score is the edge's score plus its tails' item scores."""
    score = chart["item_score"]
    head = chart["edge_head"]
    out = {}
    for e in range(len(head)):
        if chart["edge_rule"][e] == oov_rule:
            continue
        h = head[e]
        key = (int(chart["item_cell"][h]), int(chart["item_round"][h]), bool(chart["item_symbol"][h] == goal_symbol))
        t0, t1 = chart["edge_tail0"][e], chart["edge_tail1"][e]
        hyp = chart["edge_score"][e] + (score[t0] if t0 >= 0 else 0.0) + (score[t1] if t1 >= 0 else 0.0)
        out.setdefault(key, []).append((e, float(hyp)))
    return out


def stop_index(scores, threshold):
    """The first pop more than threshold below the best before it (len: none)."""
    best = scores[0] if scores else 0.0
    for i in range(1, len(scores)):
        if scores[i] < best - threshold:
            return i
        best = max(best, scores[i])
    return len(scores)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--lm", help="another LM (e.g. lm.rest.bin)")
    parser.add_argument("--test", required=True)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--pop-limit", type=int, default=300)
    parser.add_argument("--search", default="incremental")
    parser.add_argument("--out")
    args = parser.parse_args()

    from decoder.decoder import Decoder
    from decoder.lm import LanguageModel
    from decoder.search.drivers import search_driver
    from decoder.search.readback import EDGE_OOV, best_derivation

    decoder = Decoder.from_config(args.config)
    lm = LanguageModel(args.lm) if args.lm else decoder.lm
    settings = decoder.search_settings.replace(search=args.search, pop_limit=args.pop_limit)
    driver = search_driver(args.search)(decoder.store, lm, decoder.weights, decoder.space, settings)
    with open(args.test, encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.strip()][args.skip: args.skip + args.sentences]
    cut_pops = dict.fromkeys(THRESHOLDS, 0)
    cut_best = dict.fromkeys(THRESHOLDS, 0)
    verses_cut = dict.fromkeys(THRESHOLDS, 0)
    n_pops = n_best = 0
    best_gaps, best_ranks, spreads, full = [], [], [], 0
    n_searches = 0
    for words in sentences:
        result = driver.run(words)
        if len(result.roots) == 0:
            continue
        chart = result.chart
        _, _, edges = best_derivation(chart, result.roots, result.root_boundary, decoder.weights["lm"])
        on_best = set(edges)
        searches = queue_searches(chart, driver.grammar.goal_symbol, EDGE_OOV)
        verse_cut = dict.fromkeys(THRESHOLDS, False)
        for pops in searches.values():
            scores = [s for _, s in pops]
            n_searches += 1
            n_pops += len(scores)
            full += len(scores) >= args.pop_limit
            top = max(scores)
            spreads.append(top - min(scores))
            ranks = [i for i, (e, _) in enumerate(pops) if e in on_best]
            n_best += len(ranks)
            for i in ranks:
                best_gaps.append(max(scores[: i + 1]) - scores[i])
                best_ranks.append(i)
            for t in THRESHOLDS:
                stop = stop_index(scores, t)
                cut_pops[t] += len(scores) - stop
                cut = sum(i >= stop for i in ranks)
                cut_best[t] += cut
                verse_cut[t] |= cut > 0
        for t in THRESHOLDS:
            verses_cut[t] += verse_cut[t]
    q = lambda values, p: round(float(np.percentile(values, p)), 3)  # noqa: E731
    report = {
        "search": args.search, "pop_limit": args.pop_limit, "lm": args.lm, "verses": len(sentences),
        "skip": args.skip, "queue_searches": n_searches, "searches_at_the_pop_limit": full,
        "complete_pops": n_pops, "best_edges": n_best,
        "spread_best_minus_worst_pop": {"median": q(spreads, 50), "p10": q(spreads, 10), "p90": q(spreads, 90)},
        "best_edge_gap_below_its_searchs_best_pop": {"median": q(best_gaps, 50), "p90": q(best_gaps, 90),
                                                     "p99": q(best_gaps, 99), "max": round(max(best_gaps), 3)},
        "best_edge_pop_rank": {"median": q(best_ranks, 50), "p90": q(best_ranks, 90)},
        "by_threshold": [{"threshold": t, "pops_cut": round(cut_pops[t] / n_pops, 4),
                          "best_edges_cut": round(cut_best[t] / n_best, 4), "verses_with_a_best_edge_cut":
                          verses_cut[t]} for t in THRESHOLDS],
    }
    print(json.dumps(report, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
