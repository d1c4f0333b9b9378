"""The two binarization claims `cky bench` checks on its pop-limit sweep (experiment 3, common weights).

1. Xiao, Li, Zhang, Zhu and Zhou 2009 (section 5, Figures 8-10): ICR's grammar makes the decoder
   propose about 25% fewer edges than the left-heavy one at equal or better BLEU. The goal: ICR's edges
   per sentence at most ICR_EDGE_RATIO times `left`'s, with BLEU at least `left`'s. Checked two ways:
   at equal pop limit (the same search budget), and at equal BLEU (for each `left` point, the ICR
   point with the fewest edges among those whose BLEU is at least as high: Xiao et al.'s BLEU against
   edges, Figure 9).
2. Zhang, Huang, Gildea and Knight 2006 (section 5, Figure 7): synchronous binarization ahead of the
   monolingual one in BLEU at every pop limit (their beam sizes). The goal: `left` (their Algorithm 1)
   above `monolingual` at every pop limit up to SYNCHRONOUS_MAX_POP_LIMIT; the other synchronous
   strategies' differences are listed beside it.

Both take the sweep as experiment 3 gives it: strategy -> pop limit (int, or str after JSON) -> the
summary of decoder.benchmark.experiments.summarize_decoding (bleu, edges_per_sentence, model_cost).
"""
from __future__ import annotations

ICR_EDGE_RATIO = 0.75  # Xiao et al.: about 25% fewer edges than left-heavy
SYNCHRONOUS_MAX_POP_LIMIT = 1000
SYNCHRONOUS = ("left", "right", "random", "icr")  # the strategies whose virtual items are target-contiguous


def grammar_cost_ratio(costs: dict) -> float | None:
    """Q(icr) / Q(left) of experiment 1's table (strategy -> {"cost": ...}), when both were measured: the
    measured cause icr_lines prints beside the edge ratios."""
    icr, left = costs.get("icr"), costs.get("left")
    return icr["cost"] / left["cost"] if icr and left and left.get("cost") else None


def _points(sweep: dict, strategy: str) -> dict[int, dict]:
    return {int(pop): value for pop, value in sweep.get(strategy, {}).items()}


def _point(value: dict) -> dict:
    return {"bleu": value["bleu"], "edges": value["edges_per_sentence"], "model_score": -value["model_cost"],
            "failed": value.get("failed", 0)}


def icr_against_left(sweep: dict, goal: float = ICR_EDGE_RATIO) -> dict | None:
    """Xiao et al.'s claim on the sweep (None without both `icr` and `left`).

    at_equal_pop_limit: per pop limit, edge_ratio = ICR edges / left edges, both BLEUs, `met` (ratio at
    most `goal` and ICR's BLEU at least left's), and by how much it is missed: `ratio_over` (ratio - goal,
    when above) and `bleu_under` (left's BLEU - ICR's, when below).
    at_equal_bleu: per left point, the ICR point of fewest edges whose BLEU is at least left's (None:
    no ICR point reaches it), its ratio and `met`.
    """
    icr, left = _points(sweep, "icr"), _points(sweep, "left")
    if not icr or not left:
        return None
    equal_pop = []
    for pop in sorted(set(icr) & set(left)):
        a, b = _point(icr[pop]), _point(left[pop])
        ratio = a["edges"] / b["edges"] if b["edges"] else None
        row = {"pop_limit": pop, "edge_ratio": ratio, "icr": a, "left": b,
               "ratio_over": max(0.0, ratio - goal) if ratio is not None else None,
               "bleu_under": max(0.0, b["bleu"] - a["bleu"])}
        row["met"] = ratio is not None and ratio <= goal and a["bleu"] >= b["bleu"]
        equal_pop.append(row)
    equal_bleu = []
    for pop in sorted(left):
        b = _point(left[pop])
        reaching = [(p, _point(v)) for p, v in icr.items() if v["bleu"] >= b["bleu"]]
        row = {"left_pop_limit": pop, "left": b, "icr_pop_limit": None, "icr": None, "edge_ratio": None,
               "met": False}
        if reaching:
            p, a = min(reaching, key=lambda item: item[1]["edges"])
            ratio = a["edges"] / b["edges"] if b["edges"] else None
            row.update(icr_pop_limit=p, icr=a, edge_ratio=ratio, met=ratio is not None and ratio <= goal,
                       ratio_over=max(0.0, ratio - goal) if ratio is not None else None)
        equal_bleu.append(row)
    return {"goal_edge_ratio": goal, "at_equal_pop_limit": equal_pop, "at_equal_bleu": equal_bleu,
            "met_at_pop_limits": [r["pop_limit"] for r in equal_pop if r["met"]],
            "met": bool(equal_pop) and all(r["met"] for r in equal_pop)}


def synchronous_against_monolingual(sweep: dict, synchronous: str = "left",
                                    max_pop_limit: int = SYNCHRONOUS_MAX_POP_LIMIT) -> dict | None:
    """Zhang et al.'s claim on the sweep (None without `monolingual` and `synchronous`): per pop limit up
    to max_pop_limit, BLEU, edges and model score of both and `difference` = synchronous BLEU - monolingual
    BLEU, with the other synchronous strategies' differences (`others`); `met` when every difference is
    above zero, else `behind_at` (the pop limits where it is not) and `shortfall` (the largest
    monolingual - synchronous BLEU there)."""
    mono, sync = _points(sweep, "monolingual"), _points(sweep, synchronous)
    if not mono or not sync:
        return None
    rows = []
    for pop in sorted(p for p in set(mono) & set(sync) if p <= max_pop_limit):
        a, b = _point(sync[pop]), _point(mono[pop])
        others = {s: _point(_points(sweep, s)[pop])["bleu"] - b["bleu"] for s in SYNCHRONOUS
                  if s != synchronous and pop in _points(sweep, s)}
        rows.append({"pop_limit": pop, "synchronous": a, "monolingual": b, "difference": a["bleu"] - b["bleu"],
                     "others": others})
    behind = [r["pop_limit"] for r in rows if r["difference"] <= 0]
    return {"synchronous": synchronous, "max_pop_limit": max_pop_limit, "by_pop_limit": rows,
            "met": bool(rows) and not behind, "behind_at": behind,
            "shortfall": max((-r["difference"] for r in rows if r["difference"] <= 0), default=0.0)}


def goals(sweep: dict) -> dict:
    """Both claims on a sweep (a claim whose strategies were not decoded is None)."""
    return {"icr_against_left": icr_against_left(sweep),
            "synchronous_against_monolingual": synchronous_against_monolingual(sweep)}


# ---- the report lines ---------------------------------------------------------------------------

def icr_lines(result: dict | None, grammar_cost_ratio: float | None = None) -> list[str]:
    """"ICR edges / left edges = x at BLEU a vs b: goal met/not met by ..." for each pop limit, then at
    equal BLEU; grammar_cost_ratio (Q(icr) / Q(left), experiment 1) is printed as the measured cause."""
    if result is None:
        return ["- ICR against left: not measured (the sweep lacks `icr` or `left`)."]
    goal = result["goal_edge_ratio"]
    lines = []
    for row in result["at_equal_pop_limit"]:
        if row["edge_ratio"] is None:
            lines.append(f"- pop limit {row['pop_limit']}: left proposed no edges")
            continue
        lines.append(f"- pop limit {row['pop_limit']}: ICR edges / left edges = {row['edge_ratio']:.3f} "
                     f"({row['icr']['edges']:,.0f} / {row['left']['edges']:,.0f}) at BLEU {row['icr']['bleu']:.2f} "
                     f"vs {row['left']['bleu']:.2f}: " + _verdict(row, goal)
                     + f"; model score icr - left {row['icr']['model_score'] - row['left']['model_score']:+.2f}")
    lines.append("- at equal or better BLEU (for each `left` point, the ICR point of fewest edges with BLEU at "
                 "least left's):")
    for row in result["at_equal_bleu"]:
        if row["icr"] is None:
            lines.append(f"  - left at pop limit {row['left_pop_limit']} (BLEU {row['left']['bleu']:.2f}, "
                         f"{row['left']['edges']:,.0f} edges): no ICR point reaches its BLEU: goal not met")
            continue
        verdict = ("goal met" if row["met"] else f"goal not met by {row['ratio_over']:.3f} in the ratio")
        lines.append(f"  - left at pop limit {row['left_pop_limit']}: ICR edges / left edges = "
                     f"{row['edge_ratio']:.3f} (ICR at pop limit {row['icr_pop_limit']}) at BLEU "
                     f"{row['icr']['bleu']:.2f} vs {row['left']['bleu']:.2f}: {verdict}")
    met = result["met_at_pop_limits"]
    met_bleu = [r["left_pop_limit"] for r in result["at_equal_bleu"] if r["met"]]
    lines.append(f"- goal (ratio at most {goal:.2f} at equal or better BLEU): at equal pop limit met at "
                 + (f"{', '.join(map(str, met))}" if met else "none")
                 + f" of {len(result['at_equal_pop_limit'])} pop limits; at equal BLEU met for "
                 + (f"left's points at {', '.join(map(str, met_bleu))}" if met_bleu else "none")
                 + f" of {len(result['at_equal_bleu'])}"
                 + (f"; Q(G') icr / left = {grammar_cost_ratio:.3f}" if grammar_cost_ratio else "")
                 + ".")
    return lines


def _verdict(row: dict, goal: float) -> str:
    if row["met"]:
        return f"goal met (ratio {goal - row['edge_ratio']:.3f} under {goal:.2f})"
    misses = []
    if row["ratio_over"]:
        misses.append(f"{row['ratio_over']:.3f} in the ratio (goal {goal:.2f})")
    if row["bleu_under"]:
        misses.append(f"{row['bleu_under']:.2f} BLEU")
    return "goal not met by " + " and ".join(misses)


def synchronous_lines(result: dict | None) -> list[str]:
    """"sync - mono BLEU at each pop limit" and the verdict."""
    if result is None:
        return ["- synchronous against monolingual: not measured (the sweep lacks `monolingual` or `left`)."]
    sync = result["synchronous"]
    lines = [f"- sync ({sync}) - mono BLEU at each pop limit: "
             + ", ".join(f"{r['pop_limit']}: {r['difference']:+.2f}" for r in result["by_pop_limit"])]
    for other in SYNCHRONOUS:
        values = [(r["pop_limit"], r["others"][other]) for r in result["by_pop_limit"] if other in r["others"]]
        if values:
            lines.append(f"- {other} - mono BLEU: " + ", ".join(f"{p}: {d:+.2f}" for p, d in values))
    if result["met"]:
        lines.append(f"- goal (synchronous ahead at every pop limit up to {result['max_pop_limit']}): met")
    else:
        behind = [r for r in result["by_pop_limit"] if r["pop_limit"] in result["behind_at"]]
        lines.append(f"- goal (synchronous ahead at every pop limit up to {result['max_pop_limit']}): not met: "
                     f"behind or level at pop limit{'s' if len(behind) > 1 else ''} "
                     f"{', '.join(map(str, result['behind_at']))}, by up to {result['shortfall']:.2f} BLEU; "
                     f"model score {sync} - mono there: "
                     + ", ".join(f"{r['pop_limit']}: {r['synchronous']['model_score'] - r['monolingual']['model_score']:+.2f}"
                                 for r in behind)
                     + f" (positive: {sync}'s search found translations the model scores higher)")
    return lines
