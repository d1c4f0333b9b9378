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


def number_cell(value, digits: int = 2) -> str:
    """A table cell: "-" for None, a float with `digits` decimals, an int with thousands separators."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def found_goals(results: dict) -> dict:
    """The goals of a run (decoder.benchmark.goals), as run_all stored them or from its sweep."""
    from .goals import goals

    return results.get("goals") or goals(results["pop_limit_sweep"])


def goal_section(results: dict) -> list[str]:
    """Zhang et al.'s synchronous against monolingual binarization (a table at equal pop limits), then
    the two goals (goal_lines)."""
    lines = ["## 3a. Synchronous against monolingual binarization (Zhang et al. 2006, Figure 7), common weights", ""]
    zhang = found_goals(results)["synchronous_against_monolingual"]
    if zhang is None:
        lines += ["Not measured: the sweep lacks `monolingual` or `left`.", ""]
    else:
        sync = zhang["synchronous"]
        rows = [[r["pop_limit"], number_cell(r["monolingual"]["bleu"]), number_cell(r["synchronous"]["bleu"]),
                 f"{r['difference']:+.2f}", number_cell(r["monolingual"]["edges"], 0), number_cell(r["synchronous"]["edges"], 0),
                 number_cell(r["monolingual"]["model_score"]), number_cell(r["synchronous"]["model_score"])]
                for r in zhang["by_pop_limit"]]
        lines += _table(["pop limit", "mono BLEU", f"{sync} BLEU", f"{sync} - mono", "mono edges/sentence",
                         f"{sync} edges/sentence", "mono model score", f"{sync} model score"], rows) + [""]
    return lines + ["## Goals", ""] + goal_lines(results)


def goal_lines(results: dict) -> list[str]:
    """The two goals' lines (decoder.benchmark.goals.icr_lines and synchronous_lines), with Q(icr) / Q(left)."""
    from .goals import ICR_EDGE_RATIO, grammar_cost_ratio, icr_lines, synchronous_lines

    found = found_goals(results)
    ratio = grammar_cost_ratio(results.get("grammar_cost", {}).get("strategies", {}))
    lines = ["ICR against left-heavy (Xiao et al. 2009: about 25% fewer edges at equal or better BLEU; goal: "
             f"ICR edges at most {ICR_EDGE_RATIO} times left's):", ""]
    lines += icr_lines(found["icr_against_left"], ratio)
    lines += ["", "Synchronous against monolingual (Zhang et al. 2006: ahead in BLEU at every pop limit):", ""]
    return lines + synchronous_lines(found["synchronous_against_monolingual"])


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
        rows.append([name, number_cell(entry["cost"], 0), number_cell(entry["binary_rules"], 0),
                     number_cell(entry["virtual_nonterminals"], 0), number_cell(entry["non_binarizable"], 0),
                     number_cell(entry["seconds"])])
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
            rows.append([strategy, number_cell(entry["dev"]["bleu"]), number_cell(p_dev, 3), number_cell(entry["test"]["bleu"]),
                         number_cell(p_test, 3), entry.get("mert", {}).get("iterations", "-")])
        lines += _table(["strategy", "dev BLEU", "p (dev)", "test BLEU", "p (test)", "MERT iterations"], rows)

        sweep = results["pop_limit_sweep"]
        sweep_sentences = next((v["sentences"] for points in sweep.values() for v in points.values()), 0)
        lines += ["", "## 3. BLEU, edges per sentence and model score against the pop limit (Xiao Fig. 8-10), "
                  "common weights", "",
                  f"{sweep_sentences} test sentences; common weights: {results.get('common_weights_from', '-')}; "
                  f"MERT started from {results.get('mert_start', 'the decoder defaults')}. Model score: the sum "
                  "over the sentences (higher is better).", ""]
        rows = []
        for strategy, points in sweep.items():
            for pop_limit, v in points.items():
                rows.append([strategy, pop_limit, number_cell(v["bleu"]), number_cell(v["edges_per_sentence"], 0),
                             number_cell(v["edges_kept_per_sentence"], 0), number_cell(-v["model_cost"]),
                             number_cell(v["sentences_per_second"])]
                            + ([f"{v['failed']} failed"] if v.get("failed") else []))
        lines += _table(["strategy", "pop limit", "BLEU", "edges/sentence", "kept/sentence", "model score",
                         "sentences/s"], rows)
        lines += [""] + goal_section(results)

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
                rows.append([strategy, p["pop_limit"], number_cell(p["model_cost"]), number_cell(p["lm_queries_novel"], 0),
                             number_cell(p["seconds"]), number_cell(p["bleu"])])
        lines += _table(["strategy", "pop limit", "model cost", "novel LM queries", "seconds", "BLEU"], rows)

        speed = results["throughput"]
        lines += ["", "## 6. Speed and memory of one `cky translate` process", ""]
        lines += _table(["strategy", "sentences", "seconds (with loading)", "sentences/s", "peak memory (MB)"],
                        [[speed["strategy"], speed["sentences"], number_cell(speed["seconds"]),
                          number_cell(speed["sentences_per_second"]), number_cell(speed["peak_memory_mb"], 0)]])
    if skipped:
        lines += ["", "## Not measured", ""]
        lines += [f"- {key}: {reason}" for key, reason in skipped.items()]
    if results.get("plots"):
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in results["plots"]]
    return "\n".join(lines) + "\n"



# ---- several pairs in one report ---------------------------------------------------------------------

def write_combined(combined: dict, out: str, log=print) -> None:
    """Each pair's results (results.json, results.md, plots) in out/PAIR, and in `out` results.json (every
    pair's results, under "pairs") and results.md (combined_markdown)."""
    for pair, results in combined["pairs"].items():
        results["command"] = combined["command"]
        write_results(results, os.path.join(out, pair), log=log)
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(combined, f, indent=2, default=str)
        f.write("\n")
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write(combined_markdown(combined))


def combined_markdown(combined: dict) -> str:
    """The pairs side by side (grammar cost, tuned BLEU of left and icr, the goals), then each pair's
    report (markdown) one heading level down, its plots in its own directory."""
    pairs = combined["pairs"]
    lines = [f"# cky bench: {' and '.join(r['system']['name'] for r in pairs.values()) or 'no system'}", "",
             f"`{combined.get('command', 'cky bench')}`", ""]
    lines += [f"- {pair}: skipped, {reason}" for pair, reason in combined.get("skipped", {}).items()]
    if pairs:
        header = [""] + list(pairs)
        rows = [["build"] + [f"`{r['system'].get('build') or '-'}`" for r in pairs.values()],
                ["rules (Q(G') table)"] + [number_cell(r["grammar_cost"]["source_rules"]) for r in pairs.values()]]
        for strategy in ("left", "icr"):
            rows.append([f"Q(G') {strategy}"] + [number_cell(r["grammar_cost"]["strategies"].get(strategy, {}).get("cost"), 0)
                                                 for r in pairs.values()])
        for strategy in ("monolingual", "left", "icr"):
            row = [f"test BLEU {strategy} after MERT (p against left)"]
            for r in pairs.values():
                entry = r.get("bleu", {}).get(strategy)
                p = entry["test"].get("bootstrap", {}).get("p_value") if entry else None
                row.append("-" if entry is None else number_cell(entry["test"]["bleu"]) + (f" (p = {p:.3f})" if p is not None else ""))
            rows.append(row)
        lines += [""] + _table(header, rows) + [""]
        for pair, results in pairs.items():
            if "pop_limit_sweep" in results:
                lines += [f"### Goals, {pair}", ""] + goal_lines(results) + [""]
    for pair, results in pairs.items():
        text = markdown(results).replace("](", f"]({pair}/")  # the pair's plots are in its directory
        lines += ["", "\n".join(("#" + line) if line.startswith("#") else line for line in text.splitlines())]
    return "\n".join(lines) + "\n"
