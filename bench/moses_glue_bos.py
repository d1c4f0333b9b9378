"""Glue failure points of bench.moses_diagnose against the `<s>` context (bench/results/moses.md,
"Held-out failures at pop limit 1000").

    python -m bench.moses_glue_bos --diagnosis bench/results/moses_diagnose_heldout.json --run 2 [--run 3]

Ours scores `<s>` only at the root (ChartSearch.roots), so our GOAL items over [0, k) are ranked by
an inside score whose first words carry the LM's estimate; Moses' glue start `<s> X` scores them in
the context of `<s>`. For each glue-concatenation failure point of the chosen diagnosis runs (their
search settings), decodes the verse again and prints the rank of Moses' GOAL child among our GOAL
items over its span by our inside score and by that score plus the weighted `<s>` context of the
item's first words (KenLM: log10 p(first words | <s>) - log10 p(first words), at most order - 1
words, which every derivation of the item shares). Rank 0: the glue cube's first corner.

Historical: since `<s>` is scored at the glue start (moses.md, "`<s>` at the glue start"), our GOAL
items' inside scores already hold the `<s>` context, so the second ranking here counts it twice; the
tool measures the decoder before that change (run it from a tree before it).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib

import numpy as np

from bench.bench_moses import BUILD


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--diagnosis", required=True, help="a bench.moses_diagnose --json file")
    parser.add_argument("--run", type=int, action="append", required=True, help="index of a run in it")
    parser.add_argument("--config", default=os.path.join(BUILD, "demo", "config.toml"))
    parser.add_argument("--source", default=os.path.join(BUILD, "test.es"))
    args = parser.parse_args(argv)

    import kenlm

    from bench.moses_diagnose import ChartIndex
    from decoder.decoder import Decoder
    from decoder.grammar import escape_word
    from decoder.search.model import LM
    from decoder.search.readback import edge_tails

    runs = json.loads(pathlib.Path(args.diagnosis).read_text())
    with open(args.source, encoding="utf-8") as f:
        source = [line.rstrip("\n") for line in f]
    for r in args.run:
        run = runs[r]
        decoder = Decoder.from_config(args.config, max_unary_depth=run["max_unary_depth"], table_limit=run["table_limit"],
                                      pop_limit=run["pop_limit"], **run["settings"])
        model = kenlm.Model(decoder.lm.path)
        order = model.order
        weight = decoder.weights[LM]
        reader = decoder.chart.reader
        goal = decoder.chart.grammar.goal_symbol
        print(f"run {r}: pop limit {run['pop_limit']} {run['settings']}")
        moved = top = n = 0
        for verse in run["verses"]:
            for failure in verse["failures"]:
                if failure["kind"] != "glue" or len(failure["children"]) != 2:
                    continue
                k, rank = failure["children"][0][1][1], failure["children_ranks"][0][0]
                words = [escape_word(w) for w in source[verse["verse"]].split()]
                chart = decoder.chart.run(words).chart
                index = ChartIndex(chart, len(words), decoder.store, goal)
                memo: dict = {}

                def blocks(item):
                    if item not in memo:
                        e = int(chart["item_best_edge"][item])
                        memo[item] = reader.edge_blocks(chart, words, e, [blocks(t) for t in edge_tails(chart, e)])
                    return memo[item]

                items = index.by_key[(goal, index.cell(0, k))]
                score = chart["item_score"][items]
                target = items[int(np.argsort(-score, kind="stable")[rank])]
                delta = np.array([model.score(" ".join(blocks(it)[0][:order - 1]), bos=True, eos=False)
                                  - model.score(" ".join(blocks(it)[0][:order - 1]), bos=False, eos=False) for it in items])
                with_bos = score + weight * delta
                new_rank = int((with_bos > with_bos[items.index(target)]).sum())
                n += 1
                top += new_rank == 0
                moved += new_rank < rank
                print(f"  verse {verse['verse']} GOAL[0,{k}): Moses' child rank {rank} of {len(items)} by inside score, "
                      f"{new_rank} with <s> (its first words {' '.join(blocks(target)[0][:order - 1])!r})")
        print(f"  {n} glue steps: Moses' child first with <s> in {top}, higher in {moved}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
