"""The report of `cky bench`: results.json, results.md (one table per experiment) and the plots.

results.md may also hold a section that `cky bench --two-pass` (bench.bench_two_pass, from a clone)
writes between SECTION_START and SECTION_END; rewriting the tables keeps it.
"""
from __future__ import annotations

import json
import os
import pathlib

from ..errors import UsageError

SECTION_START, SECTION_END = "<!-- two-pass (bench.bench_two_pass) -->", "<!-- /two-pass -->"


def write_results(results: dict, out: str, log=print) -> None:
    """results.json, results.md and the plots in `out`. Without matplotlib (the `plot` extra) the plots
    are left out with one line saying so; a section that `cky bench --two-pass` wrote stays."""
    from .plots import plot_all

    os.makedirs(out, exist_ok=True)
    try:
        results["plots"] = [os.path.basename(p) for p in plot_all(results, out)]
    except UsageError as error:  # matplotlib is not installed
        results["plots"] = []
        log(f"no plots: {error}")
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, default=str)
        f.write("\n")
    path = os.path.join(out, "results.md")
    previous = pathlib.Path(path).read_text(encoding="utf-8") if os.path.exists(path) else ""
    with open(path, "w", encoding="utf-8") as f:
        f.write(markdown(results))
        if SECTION_START in previous and SECTION_END in previous:  # `cky bench --two-pass`'s section stays
            f.write("\n" + SECTION_START + previous.split(SECTION_START, 1)[1].split(SECTION_END, 1)[0]
                    + SECTION_END + "\n")


# ---- the markdown tables --------------------------------------------------------------------------

def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header, rows) -> list[str]:
    return [_row(header), _row(["---"] * len(header))] + [_row(r) for r in rows]


def _number(value, digits=2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def markdown(results: dict) -> str:
    system = results["system"]
    lines = [f"# cky bench: {system['name']}", "",
             f"{results['date']}, `{results.get('command', 'cky bench')}`, commit "
             f"{(results['machine'].get('git_commit') or '?')[:10]}, {results['machine'].get('cpu_model')} "
             f"({results['machine'].get('cpus')} CPUs), total {results.get('seconds', 0):.0f} s.", ""]
    for note in system.get("notes", []):
        lines += [f"Note: {note}.", ""]

    costs = results["grammar_cost"]
    scope = "filtered to dev+test" if costs.get("filtered_to_dev_and_test") else "the whole table"
    lines += [f"## 1. Grammar cost Q(G') (Xiao Table 2) of {costs['source_rules']:,} rules ({scope})", ""]
    rows = []
    for strategy, entry in costs["strategies"].items():
        name = strategy + (f" (mean of {entry['seeds']} seeds, sd {entry['cost_stdev']:,.0f})"
                           if strategy == "random" else "")
        rows.append([name, _number(entry["cost"], 0), _number(entry["binary_rules"], 0),
                     _number(entry["virtual_nonterminals"], 0), _number(entry["non_binarizable"], 0),
                     _number(entry["seconds"])])
    lines += _table(["strategy", "Q(G')", "binary rules", "virtual NTs", "non-binarizable", "seconds"], rows)
    per_iteration = costs["strategies"].get("icr", {}).get("cost_by_iteration")
    if per_iteration:
        lines += ["", "icr cost per iteration: " + " -> ".join(f"{q:,}" for q in per_iteration)]

    skipped = results.get("skipped", {})
    if "bleu" in results:
        lines += ["", "## 2. BLEU after MERT (Xiao Table 3), paired bootstrap p against `left`", ""]
        rows = []
        for strategy, entry in results["bleu"].items():
            p_dev = entry["dev"].get("bootstrap", {}).get("p_value")
            p_test = entry["test"].get("bootstrap", {}).get("p_value")
            rows.append([strategy, _number(entry["dev"]["bleu"]), _number(p_dev, 3), _number(entry["test"]["bleu"]),
                         _number(p_test, 3), entry.get("mert", {}).get("iterations", "-")])
        lines += _table(["strategy", "dev BLEU", "p (dev)", "test BLEU", "p (test)", "MERT iterations"], rows)

        lines += ["", "## 3. BLEU and edges per sentence against the pop limit (Xiao Fig. 8-10), common weights",
                  ""]
        rows = []
        for strategy, points in results["pop_limit_sweep"].items():
            for pop_limit, v in points.items():
                rows.append([strategy, pop_limit, _number(v["bleu"]), _number(v["edges_per_sentence"], 0),
                             _number(v["edges_kept_per_sentence"], 0), _number(v["sentences_per_second"])])
        lines += _table(["strategy", "pop limit", "BLEU", "edges/sentence", "kept/sentence", "sentences/s"], rows)

        lines += ["", "## 4. Competing items per cell by span length (Xiao Fig. 11-12): mean / variance", ""]
        competition = results["cell_competition"]
        lengths = sorted({int(n) for table in competition.values() for n in table})
        rows = []
        for length in lengths:
            row = [length]
            for strategy, table in competition.items():
                cell = table.get(length) or table.get(str(length))
                row.append(f"{cell['mean']:.1f} / {cell['variance']:.1f}" if cell else "-")
            rows.append(row)
        lines += _table(["span"] + list(competition), rows)

        lines += ["", "## 5. Accumulated model cost against novel LM queries and seconds (Venugopal Fig. 3-5)", ""]
        rows = []
        for strategy, points in results["model_cost"].items():
            for p in points:
                rows.append([strategy, p["pop_limit"], _number(p["model_cost"]), _number(p["lm_queries_novel"], 0),
                             _number(p["seconds"]), _number(p["bleu"])])
        lines += _table(["strategy", "pop limit", "model cost", "novel LM queries", "seconds", "BLEU"], rows)

        speed = results["throughput"]
        lines += ["", "## 6. Speed and memory of one `cky translate` process", ""]
        lines += _table(["strategy", "sentences", "seconds (with loading)", "sentences/s", "peak memory (MB)"],
                        [[speed["strategy"], speed["sentences"], _number(speed["seconds"]),
                          _number(speed["sentences_per_second"]), _number(speed["peak_memory_mb"], 0)]])
    if skipped:
        lines += ["", "## Not measured", ""]
        lines += [f"- {key}: {reason}" for key, reason in skipped.items()]
    if results.get("plots"):
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in results["plots"]]
    return "\n".join(lines) + "\n"

