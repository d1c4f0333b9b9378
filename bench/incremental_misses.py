"""Where incremental search loses model score against cube pruning: the first item of cube's 1-best
derivation that incremental search does not make (or makes only with a lower score), and why.

    python -m bench.incremental_misses --config CFG --test TEST.es [--lm lm.rest.bin] \\
        [--verses 156 149 ...] [--sentences 200] --pop-limit 100 [--engine NAME=VALUE ...] --out misses.json

Both searches run over the same LM (--lm, default the config's), so their items' scores (with the LM's
estimates of their first words) can be compared. For each verse where incremental's best is worse than
cube's: walk cube's 1-best derivation bottom-up and match each item in incremental's chart by (cell,
item hash: symbol and LM state); the minimal misses are the items whose tails incremental has (with at
least cube's score) but which it does not have with at least cube's score. For each: the kind of cell
(GOAL/glue, virtual label of the binarization, real label; unary round; OOV), span length, and, from
the incremental engine's trace of that cell's queue search (IncrementalSearch.search_trace): the
hypothesis' exact score S (cube's edge over incremental's tails), its initial edge's key K0 (rule
score + words-only estimate + the tails' best items), the queue's best key T when the cell stopped,
the cell's pops and how many of them made a new item. Cause:
  - "never popped": K0 < T (the initial edge's key, hence every edge of its group's later rules, stayed
    below the queue's top);
  - "lost in refinement": K0 >= T and S > T (its initial edge was popped, but a partial edge on the way
    down to its tails was estimated below T, though its exact score is above);
  - "budget": S <= T (every pop scored at least S: the pops went to better hypotheses, or recombined);
  - "same state, worse": incremental has the item, reached by a worse derivation (one of the above for
    the better edge; also counted under it).
"""
from __future__ import annotations

import argparse
import collections
import json
import os

import numpy as np

from decoder._ext import compiled_module
from decoder.search.model import LM
from decoder.search.readback import best_derivation, edge_tails

_chart = compiled_module("_chart")


def chart_index(chart):
    """(cell, item hash) -> (best alive score, item) of a chart."""
    index = {}
    for t in np.flatnonzero(chart["item_alive"]):
        key = (int(chart["item_cell"][t]), int(chart["item_hash"][t]))
        score = float(chart["item_score"][t])
        if key not in index or score > index[key][0]:
            index[key] = (score, int(t))
    return index


def best_of_symbol(chart):
    """(cell, symbol) -> best alive score."""
    best = {}
    for t in np.flatnonzero(chart["item_alive"]):
        key = (int(chart["item_cell"][t]), int(chart["item_symbol"][t]))
        score = float(chart["item_score"][t])
        if score > best.get(key, -np.inf):
            best[key] = score
    return best


def rule_ranks(arrays):
    """rule id -> its rank in its group (its position among its key's rules, best first): a rule of rank r
    enters the incremental search's queue when the initial edge of rank r - 1 is popped."""
    ranks = {}
    for sorted_name, starts in (("pair_rules_sorted", np.asarray(arrays["pair_right_keys"])["rules_lo"]),
                                ("single_rules_sorted", np.asarray(arrays["single_range"])[:, 0])):
        rules = np.asarray(arrays[sorted_name])
        starts = np.unique(starts)
        starts = starts[starts < len(rules)]
        if len(rules) == 0:
            continue
        key_start = starts[np.searchsorted(starts, np.arange(len(rules)), "right") - 1]
        for position, rule in enumerate(rules.tolist()):
            ranks.setdefault(rule, position - int(key_start[position]))
    return ranks


def diagnose(cube_result, inc_result, trace, grammar, estimates, weight_lm, ranks=None, tol=1e-4):
    """The minimal misses of cube's 1-best derivation in incremental's chart (see the module docstring)."""
    cc, ic = cube_result.chart, inc_result.chart
    n1 = cube_result.n_words + 1
    _, _, edges = best_derivation(cc, cube_result.roots, cube_result.root_boundary, weight_lm)
    index = chart_index(ic)
    best_symbol = best_of_symbol(ic)
    goal = grammar.goal_symbol
    is_real = np.asarray(grammar.arrays["symbol_is_real"])
    matched = {}
    misses = []
    for e in reversed(edges):  # (pre-order reversed: tails before heads)
        head = int(cc["edge_head"][e])
        key = (int(cc["item_cell"][head]), int(cc["item_hash"][head]))
        cube_score = float(cc["item_score"][head])
        found = index.get(key)
        tails = edge_tails(cc, e)
        ok = found is not None and found[0] >= cube_score - tol
        matched[head] = ok
        if ok or not all(matched.get(t, False) for t in tails):
            continue
        cell = key[0]
        i, j = divmod(cell, n1)
        symbol = int(cc["item_symbol"][head])
        rule = int(cc["edge_rule"][e])
        rnd = int(cc["item_round"][head])
        tail_scores = [index[(int(cc["item_cell"][t]), int(cc["item_hash"][t]))][0] for t in tails]
        edge_score = float(cc["edge_score"][e])
        exact = edge_score + sum(tail_scores)
        fixed = edge_score - weight_lm * float(cc["edge_lm"][e])
        estimate = float(estimates[rule]) if rule >= 0 and np.isfinite(estimates[rule]) else 0.0
        if rule >= 0 and np.isnan(estimates[rule]):
            estimate = float(cc["edge_lm"][e])  # carrying rule: no LM
        k0 = fixed + weight_lm * estimate + sum(best_symbol[(int(cc["item_cell"][t]), int(cc["item_symbol"][t]))]
                                                 for t in tails)
        rows = [k for k in range(len(trace["cell"])) if trace["cell"][k] == cell and trace["round"][k] == rnd]
        if symbol == goal:
            kind = "goal"
        elif rule == -1:
            kind = "oov"
        elif rnd > 0:
            kind = "unary"
        elif not is_real[symbol]:
            kind = "virtual"
        else:
            kind = "real"
        miss = dict(cell=cell, span=j - i, i=i, j=j, symbol=symbol, kind=kind, round=rnd, rule=rule,
                    rank=(ranks or {}).get(rule, -1),
                    n_tails=len(tails), cube_score=cube_score, inc_score=None if found is None else found[0],
                    exact=exact, k0=k0)
        if rows:
            k = rows[-1]
            stop, pops, made = float(trace["stop_key"][k]), int(trace["pops"][k]), int(trace["items_made"][k])
            miss.update(stop_key=stop, pops=pops, items_made=made, limit=int(trace["limit"][k]),
                        partial_pops=int(trace["partial_pops"][k]), lowest_pop=float(trace["lowest_pop"][k]))
            if exact <= stop + 1e-9:
                cause = "budget"
            elif k0 < stop:
                cause = "never popped"
            else:
                cause = "lost in refinement"
        else:
            cause = "no search" if rule != -1 else "oov"
        miss["cause"] = cause
        miss["same_state_worse"] = found is not None
        misses.append(miss)
    return misses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--lm", help="the LM of both searches (default: the config's)")
    parser.add_argument("--verses", type=int, nargs="*", default=None, help="1-based verse numbers")
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--pop-limit", type=int, default=100)
    parser.add_argument("--engine", nargs="*", default=[], metavar="NAME=VALUE",
                        help="public attributes of the incremental engine")
    parser.add_argument("--out")
    args = parser.parse_args(argv)

    from decoder.decoder import Decoder
    from decoder.lm import LanguageModel
    from decoder.search.drivers import search_driver

    decoder = Decoder.from_config(args.config)
    lm = LanguageModel(args.lm) if args.lm else decoder.lm
    drivers = {}
    options = {"trace": True}  # (the incremental engine's constructor arguments)
    for item in args.engine:
        name, value = item.split("=", 1)
        options[name] = int(value) if value.lstrip("-").isdigit() else float(value)
    for name in ("cube", "incremental"):
        settings = decoder.search_settings.replace(search=name, pop_limit=args.pop_limit)
        drivers[name] = search_driver(name)(decoder.store, lm, decoder.weights, decoder.space, settings,
                                            **({"engine_options": options} if name == "incremental" else {}))
    inc = drivers["incremental"]
    arrays = inc.grammar.arrays
    estimates = _chart.rule_lm_estimates(lm, arrays["rule_target_lm"], arrays["rule_target_offsets"])
    estimates = np.where(np.asarray(arrays["rule_carries"]) != 0, np.nan, estimates)
    weight_lm = decoder.weights[LM]
    ranks = rule_ranks(arrays)
    with open(args.test, encoding="utf-8") as f:
        lines = [line.split() for line in f if line.strip()]
    verses = args.verses or list(range(args.skip + 1, args.skip + args.sentences + 1))
    out = {"pop_limit": args.pop_limit, "lm": args.lm, "engine": args.engine, "verses": []}
    for v in verses:
        words = lines[v - 1]
        results = {}
        finals = {}
        for name, driver in drivers.items():
            r = driver.run(words)
            results[name] = r
            finals[name] = best_derivation(r.chart, r.roots, r.root_boundary, weight_lm)[0] if len(r.roots) else -np.inf
        diff = finals["incremental"] - finals["cube"]
        row = {"verse": v, "words": len(words), "cube": round(finals["cube"], 4),
               "incremental": round(finals["incremental"], 4), "diff": round(diff, 4)}
        if diff < -1e-4:
            row["misses"] = diagnose(results["cube"], results["incremental"], inc.engine.search_trace(),
                                     inc.grammar, estimates, weight_lm, ranks)
        out["verses"].append(row)
        first = min(row.get("misses", []), key=lambda m: m["span"], default=None)
        print(json.dumps({k: row[k] for k in ("verse", "words", "diff")} |
                         ({"first": first, "n_misses": len(row["misses"])} if first else {})), flush=True)
    summarize(out)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(out, f)


def summarize(out):
    """Counts of the minimal misses (and of each worse verse's smallest one) by kind and cause."""
    worse = [r for r in out["verses"] if r["diff"] < -1e-4]
    better = sum(r["diff"] > 1e-4 for r in out["verses"])
    print(f"pop limit {out['pop_limit']}: {len(out['verses'])} verses, incremental worse on {len(worse)} "
          f"(sum {sum(r['diff'] for r in worse):.2f}), better on {better}")
    for label, pick in (("all minimal misses", lambda r: r.get("misses", [])),
                        ("smallest per verse", lambda r: sorted(r.get("misses", []), key=lambda m: m["span"])[:1])):
        by = collections.Counter()
        for r in worse:
            for m in pick(r):
                by[(m["kind"], m["cause"])] += 1
        print(f"  {label}: " + ", ".join(f"{k}/{c} {n}" for (k, c), n in sorted(by.items(), key=lambda x: -x[1])))
    misses = [m for r in worse for m in r.get("misses", [])]
    for cause in sorted({m["cause"] for m in misses}):
        of = [m for m in misses if m["cause"] == cause and "stop_key" in m]
        if of:
            gap = np.array([m["exact"] - m["k0"] for m in of])
            above = np.array([m["exact"] - m["stop_key"] for m in of])
            below = np.array([m["stop_key"] - m["k0"] for m in of])
            print(f"  {cause}: {len(of)}, exact - K0 mean {gap.mean():.2f} (median {np.median(gap):.2f}), exact - T "
                  f"mean {above.mean():.2f}, T - K0 mean {below.mean():.2f}, rank 0: {sum(m['rank'] == 0 for m in of)}")
    spans = collections.Counter()
    for r in worse:
        for m in r.get("misses", []):
            spans[min(m["span"], 10)] += 1
    print("  minimal misses by span (10: 10+): " + ", ".join(f"{s}: {n}" for s, n in sorted(spans.items())))


if __name__ == "__main__":
    main()
