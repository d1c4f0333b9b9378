"""PNG plots of `cky bench` results (matplotlib, Agg backend: no display needed).

matplotlib is the optional `plot` extra (`pip install 'cky-decoder[plot]'`):
only plotting imports it, through `pyplot()`, which says how to install it
when it is missing.
"""
from __future__ import annotations

import os

from ..errors import UsageError

MISSING_MATPLOTLIB = "plotting needs matplotlib: pip install 'cky-decoder[plot]' (or pip install matplotlib)"


def pyplot():
    """matplotlib.pyplot on the Agg backend; UsageError with the install command if matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError(MISSING_MATPLOTLIB) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, figure, out_dir: str, name: str, written: list) -> None:
    path = os.path.join(out_dir, name)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    written.append(path)


def plot_all(results: dict, out_dir: str) -> list[str]:
    """Every plot the results allow; returns the paths written."""
    plt = pyplot()
    written: list[str] = []
    costs = results.get("grammar_cost", {}).get("strategies", {})
    if costs:
        figure, (bars, sweep) = plt.subplots(1, 2, figsize=(10, 3.8))
        names = list(costs)
        bars.bar(names, [costs[n]["cost"] for n in names], color="tab:blue")
        bars.set_yscale("log")
        bars.set_title("grammar cost Q(G') (Xiao Table 2)")
        bars.set_ylabel("Q(G') = sum of squared bucket sizes")
        per_iteration = costs.get("icr", {}).get("cost_by_iteration") or []
        if per_iteration:
            sweep.plot(range(len(per_iteration)), per_iteration, marker="o")
            sweep.set_xlabel("icr iteration (0: left)")
            sweep.set_ylabel("Q(G')")
            sweep.set_title("icr cost per iteration (Xiao Fig. 6/7)")
        _save(plt, figure, out_dir, "grammar_cost.png", written)

    sweep = results.get("pop_limit_sweep")
    if sweep:
        figure, (by_limit, by_edges) = plt.subplots(1, 2, figsize=(10, 3.8))
        for strategy, points in sweep.items():
            limits = sorted(points, key=float)
            by_limit.plot([float(p) for p in limits], [points[p]["bleu"] for p in limits], marker="o", label=strategy)
            by_edges.plot([points[p]["edges_per_sentence"] for p in limits], [points[p]["bleu"] for p in limits],
                          marker="o", label=strategy)
        by_limit.set_xscale("log")
        by_limit.set_xlabel("pop limit")
        by_limit.set_ylabel("BLEU")
        by_limit.set_title("BLEU vs pop limit (Xiao Fig. 8/9)")
        by_edges.set_xscale("log")
        by_edges.set_xlabel("edges proposed per sentence")
        by_edges.set_ylabel("BLEU")
        by_edges.set_title("BLEU vs edges (Xiao Fig. 10)")
        by_limit.legend()
        _save(plt, figure, out_dir, "pop_limit.png", written)

    competition = results.get("cell_competition")
    if competition and any(competition.values()):
        figure, (means, variances) = plt.subplots(1, 2, figsize=(10, 3.8))
        for strategy, table in competition.items():
            lengths = sorted(table, key=int)
            means.plot([int(n) for n in lengths], [table[n]["mean"] for n in lengths], marker=".", label=strategy)
            variances.plot([int(n) for n in lengths], [table[n]["variance"] for n in lengths], marker=".",
                           label=strategy)
        means.set_title("mean competing items per cell (Xiao Fig. 12)")
        variances.set_title("variance of competing items per cell (Xiao Fig. 11)")
        for axis in (means, variances):
            axis.set_xlabel("span length")
        means.legend()
        _save(plt, figure, out_dir, "cell_competition.png", written)

    model_cost = results.get("model_cost")
    if model_cost:
        figure, (by_queries, by_seconds) = plt.subplots(1, 2, figsize=(10, 3.8))
        for strategy, points in model_cost.items():
            by_queries.plot([p["lm_queries_novel"] for p in points], [p["model_cost"] for p in points], marker="o",
                            label=strategy)
            by_seconds.plot([p["seconds"] for p in points], [p["model_cost"] for p in points], marker="o",
                            label=strategy)
        by_queries.set_xlabel("novel LM queries")
        by_seconds.set_xlabel("decoding seconds")
        for axis in (by_queries, by_seconds):
            axis.set_xscale("log")
            axis.set_ylabel("accumulated model cost")
        by_queries.set_title("model cost vs LM queries (Venugopal Fig. 3/4)")
        by_seconds.set_title("model cost vs time (Venugopal Fig. 5)")
        by_queries.legend()
        _save(plt, figure, out_dir, "model_cost.png", written)
    return written
