"""Cube pruning against two-pass search (Venugopal et al. 2007, Figures 3-5 and Table 1).

One decoder config (store, LM, glue, weights: the same for both searches), one test
file. Sweeps cube pruning's pop limit and two-pass search's first-pass pop limit x
second-pass bounds (beam, agenda size, pops), and writes one JSON object per run
(appended to --out as it finishes, one per line, so a long sweep can be watched
and a cut-short one still reports): model cost (minus the summed model score),
LM queries (all, and novel: LM cache misses), CPU and wall seconds, agenda pops
and unwindings, and BLEU against the reference. `--report` then turns the runs
into the PNG (model cost against novel LM queries, against CPU seconds; BLEU) and
the Markdown table.

    python -m bench.bench_two_pass --config models/bible-es-en/build/demo/config.toml \
        --test test.es --ref test.en --sentences 200 --out bench/results/two_pass.jsonl
    python -m bench.bench_two_pass --report bench/results/two_pass.jsonl --results-dir bench/results
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

CUBE_POP_LIMITS = (1, 10, 30, 100, 300, 1000)
# Second-pass bounds (two_pass_beam, agenda_limit, max_pops): tight, the settings' defaults, loose.
TIGHT, DEFAULT, LOOSE = (2.0, 100, 1000), (5.0, 1000, 10000), (10.0, 10000, 100000)
# Two-pass runs (first-pass pop limit, first-pass items per cell (beam_size; 0: no limit), second
# pass), in the order they run: the first pass keeps one item per (X, i, j), so at a given pop limit
# it spreads its pops over more symbols than cube pruning does, and parent cells build more
# hyperedges; beam_size bounds that (the paper's first-pass beam).
TWO_PASS_RUNS = (
    (10, 0, TIGHT), (10, 0, DEFAULT), (30, 0, TIGHT), (30, 0, DEFAULT), (10, 0, LOOSE),
    (100, 0, TIGHT), (100, 0, DEFAULT),
    (30, 10, TIGHT), (100, 10, TIGHT), (100, 30, TIGHT), (300, 30, TIGHT), (300, 50, TIGHT),
    (300, 50, DEFAULT), (300, 100, TIGHT), (1000, 50, TIGHT), (1000, 100, TIGHT), (300, 0, TIGHT), (1000, 200, TIGHT),
    (30, 0, LOOSE),
)


def run(decoder, sentences, references, label: str, parameters: dict) -> dict:
    """Decode every sentence with the decoder as configured; totals and BLEU."""
    from decoder.evaluate import corpus_bleu

    totals = dict(edges_proposed=0, edges_kept=0, lm_queries=0, lm_queries_novel=0, agenda_pops=0, unwindings=0)
    score = 0.0
    outputs = []
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    for words in sentences:
        translation = decoder.translate(words)
        for key in totals:
            totals[key] += int(translation.stats.get(key, 0))
        score += translation.score
        outputs.append(translation.text)
    cpu = time.process_time() - cpu_started
    out = {"search": label, **parameters, "sentences": len(sentences), "model_cost": round(-score, 4),
           "cpu_seconds": round(cpu, 3), "wall_seconds": round(time.perf_counter() - wall_started, 3), **totals}
    if references is not None:
        out["bleu"] = round(corpus_bleu(outputs, references[: len(outputs)]).score, 2)
    return out


def grid(cube_pop_limits, two_pass_runs) -> list[tuple[str, dict]]:
    """(search, settings) of every run: cube pruning's up to pop limit 300, then the two-pass runs
    interleaved by cost, cube pruning's larger pop limits last (the slowest)."""
    cube = [("cube", {"pop_limit": p}) for p in cube_pop_limits]
    two_pass = [("two-pass", {"pop_limit": p, "beam_size": items, "two_pass_beam": beam, "agenda_limit": agenda,
                              "max_pops": pops}) for p, items, (beam, agenda, pops) in two_pass_runs]
    cheap = [run for run in cube if run[1]["pop_limit"] <= 100]
    return (cheap + two_pass[:7] + [run for run in cube if 100 < run[1]["pop_limit"] <= 300] + two_pass[7:12]
            + [run for run in cube if run[1]["pop_limit"] > 300] + two_pass[12:])


def run_key(search: str, settings: dict) -> str:
    """A run's identity in the --out file (settings left out are the defaults)."""
    values = {"search": search, "beam_size": 0, **{k: settings[k] for k in SETTING_KEYS[1:] if k in settings}}
    return json.dumps(values, sort_keys=True)


def sweep(args) -> int:
    from decoder.config import load_config
    from decoder.decoder import Decoder
    from decoder.evaluate import read_lines
    from decoder.lm import LanguageModel
    from decoder.store import GrammarStore

    config = load_config(args.config)
    arguments = config.decoder_arguments()
    # One store and one LM object for both searches: same weights, same model, loaded once.
    arguments["store"] = GrammarStore.open(arguments["store"])
    arguments["lm"] = LanguageModel(arguments["lm"])
    decoders = {search: Decoder(**{**arguments, "search": search}) for search in ("cube", "two-pass")}
    sentences = [line.split() for line in read_lines(args.test)][: args.sentences]
    references = read_lines(args.ref)[: args.sentences] if args.ref else None
    defaults = decoders["cube"].search_settings
    done = set()
    if os.path.exists(args.out) and args.resume:
        done = {run_key(run["search"], run) for run in read_runs(args.out)}
    for search, settings in grid(args.cube_pop_limits, TWO_PASS_RUNS):
        if run_key(search, settings) in done:
            continue
        decoder = decoders[search]
        decoder.reconfigure(**{**defaults.as_dict(), **settings, "search": search})
        result = run(decoder, sentences, references, search, settings)
        with open(args.out, "a") as f:
            f.write(json.dumps(result) + "\n")
        print(json.dumps(result), file=sys.stderr, flush=True)
    return 0


SETTING_KEYS = ("search", "pop_limit", "beam_size", "two_pass_beam", "agenda_limit", "max_pops")


# ---------------------------------------------------------------------------- report

def read_runs(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def cube_cpu_at_cost(cube: list[dict], cost: float, key: str = "cpu_seconds") -> float | None:
    """Cube pruning's `key` (CPU seconds, LM queries) at model cost `cost`, interpolated linearly
    in log(key) between the two cube runs around it (None: outside cube's range)."""
    points = sorted((run["model_cost"], run[key]) for run in cube)
    for (cost_lo, value_lo), (cost_hi, value_hi) in zip(points, points[1:]):
        if cost_lo <= cost <= cost_hi:
            if cost_hi == cost_lo:
                return value_lo
            t = (cost - cost_lo) / (cost_hi - cost_lo)
            return math.exp(math.log(value_lo) * (1 - t) + math.log(value_hi) * t)
    return None


def label(run: dict) -> str:
    if run["search"] == "cube":
        return f"cube pop {run['pop_limit']}"
    items = f", {run['beam_size']} items/cell" if run.get("beam_size") else ""
    return (f"two-pass pop {run['pop_limit']}{items}, beam {run['two_pass_beam']:g}, agenda {run['agenda_limit']}, "
            f"pops {run['max_pops']}")


def table(runs: list[dict]) -> str:
    cube = [r for r in runs if r["search"] == "cube"]
    lines = ["| search | settings | model cost | novel LM queries | LM queries | CPU s | BLEU | "
             "cube CPU s at equal cost | CPU ratio | cube novel queries at equal cost | query ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for run in sorted(runs, key=lambda r: (r["search"], r["pop_limit"], r.get("beam_size", 0), r.get("max_pops", 0))):
        settings = label(run).split(" ", 1)[1] if run["search"] == "cube" else label(run)[len("two-pass "):]
        row = [run["search"], settings, f"{run['model_cost']:.1f}", f"{run['lm_queries_novel']:,}",
               f"{run['lm_queries']:,}", f"{run['cpu_seconds']:.1f}", f"{run.get('bleu', float('nan')):.2f}"]
        if run["search"] == "two-pass":
            cpu = cube_cpu_at_cost(cube, run["model_cost"])
            queries = cube_cpu_at_cost(cube, run["model_cost"], "lm_queries_novel")
            row += [f"{cpu:.1f}" if cpu else "-", f"{run['cpu_seconds'] / cpu:.2f}" if cpu else "-",
                    f"{queries:,.0f}" if queries else "-",
                    f"{run['lm_queries_novel'] / queries:.2f}" if queries else "-"]
        else:
            row += ["", "", "", ""]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def plot(runs: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    series = {"cube": [r for r in runs if r["search"] == "cube"]}
    for run in runs:
        if run["search"] == "two-pass":
            items = f", {run['beam_size']} items/cell" if run.get("beam_size") else ""
            name = f"two-pass beam {run['two_pass_beam']:g} agenda {run['agenda_limit']}{items}"
            series.setdefault(name, []).append(run)
    for name, points in series.items():
        points = sorted(points, key=lambda r: r["pop_limit"])
        style = dict(marker="o" if name == "cube" else "s", linestyle="-" if name == "cube" else "--", label=name)
        for axis, x, y in ((axes[0], "lm_queries_novel", "model_cost"), (axes[1], "cpu_seconds", "model_cost"),
                           (axes[2], "cpu_seconds", "bleu")):
            axis.plot([r[x] for r in points], [r.get(y, float("nan")) for r in points], **style)
        for r in points:  # pop limit at each point
            axes[1].annotate(str(r["pop_limit"]), (r["cpu_seconds"], r["model_cost"]), fontsize=7,
                             textcoords="offset points", xytext=(3, 3))
    n = runs[0]["sentences"]
    costs = sorted(r["model_cost"] for r in runs)
    if len(costs) > 2:  # cube pop 1 alone would squash the rest: leave it off the top
        top = costs[-2] + 0.1 * (costs[-2] - costs[0])
        for axis in axes[:2]:
            axis.set_ylim(costs[0] - 0.05 * (top - costs[0]), top)
    axes[0].set(xscale="log", xlabel="novel LM queries (cache misses)", ylabel=f"model cost ({n} verses)",
                title="model cost vs LM queries (Venugopal Fig. 3)")
    axes[1].set(xscale="log", xlabel="CPU seconds", ylabel="model cost", title="model cost vs CPU seconds (Fig. 4)")
    axes[2].set(xscale="log", xlabel="CPU seconds", ylabel="BLEU", title="BLEU vs CPU seconds (Fig. 5)")
    axes[2].legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def report(args) -> int:
    runs = read_runs(args.report)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "two_pass.json"), "w") as f:
        json.dump(runs, f, indent=1)
    plot(runs, os.path.join(args.results_dir, "two_pass.png"))
    print(table(runs))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="decoder config (TOML): store, lm, glue, weights")
    parser.add_argument("--test", help="source sentences, one per line, tokenized")
    parser.add_argument("--ref", help="reference translations (for BLEU)")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--cube-pop-limits", type=int, nargs="*", default=list(CUBE_POP_LIMITS))
    parser.add_argument("--out", help="JSON lines file: one run per line, appended")
    parser.add_argument("--resume", action="store_true", help="skip the runs --out already has")
    parser.add_argument("--report", metavar="RUNS", help="JSON lines of a sweep: write the JSON, PNG and table")
    parser.add_argument("--results-dir", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args(argv)
    if args.report:
        return report(args)
    if not (args.config and args.test and args.out):
        parser.error("a sweep needs --config, --test and --out (or --report RUNS)")
    return sweep(args)


if __name__ == "__main__":
    sys.exit(main())
