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

    python -m bench.bench_two_pass --config models/bible-es-en/build/config.toml \
        --test test.es --ref test.en --sentences 200 --out bench/results/two_pass.jsonl
    python -m bench.bench_two_pass --report bench/results/two_pass.jsonl --results-dir bench/results

`cky bench --two-pass [--test-sentences N] [--out DIR]` runs the same sweep on the demo config
of the full Bible system (`cky demo` builds it; --quick: the tiny fixture system) and
writes the runs (two_pass.jsonl, resumed), two_pass.json, two_pass.png and the table (as a
section of results.md) to --out. `--checkpoints 200` also records the totals after the first
200 sentences of a longer run, so one 600-verse run gives the 200-verse figures too
(`--report ... --sentences 200`).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys
import time

from bench import RESULTS
from decoder.benchmark.report import SECTION_END, SECTION_START
from decoder.demo import demo_config

CUBE_POP_LIMITS = (1, 10, 30, 100, 300, 1000)
# Second-pass bounds (two_pass_beam, agenda_limit, max_pops): tight, the settings' defaults, loose.
TIGHT, DEFAULT, LOOSE = (2.0, 100, 1000), (5.0, 1000, 10000), (10.0, 10000, 100000)
# Two-pass runs (first-pass pop limit, first-pass items per cell (beam_size; 0: no limit), second
# pass[, other settings]), in the order they run: the first pass keeps one item per (X, i, j), so at
# a given pop limit it spreads its pops over more symbols than cube pruning does, and parent cells
# build more hyperedges; beam_size bounds that (the paper's first-pass beam). The grid measured in
# bench/results/two_pass.md: the items-per-cell beam at pop 100-300, the early stops of both passes
# (first_pass_items, first_pass_threshold = the paper's beta, second_pass_stop).
TWO_PASS_RUNS = (
    (100, 30, TIGHT), (150, 50, TIGHT), (200, 70, TIGHT), (300, 100, TIGHT), (300, 50, DEFAULT),
    (1000, 100, TIGHT, {"first_pass_threshold": 2.0}), (1000, 100, TIGHT, {"first_pass_threshold": 5.0}),
    (300, 100, TIGHT, {"second_pass_stop": "bound"}), (300, 100, TIGHT, {"second_pass_stop": "first"}),
    (300, 50, DEFAULT, {"second_pass_stop": "bound"}), (300, 100, TIGHT, {"first_pass_threshold": 8.0}),
    (1000, 100, TIGHT, {"first_pass_threshold": 10.0}), (1000, 100, TIGHT, {"first_pass_threshold": 20.0}),
    (1000, 0, TIGHT, {"first_pass_items": 100}),
)


def run(decoder, sentences, references, label: str, parameters: dict, checkpoints=()) -> dict:
    """Decode every sentence with the decoder as configured; totals and BLEU (and the same after
    the first n sentences for each n in `checkpoints`, under "at": {n: {...}})."""
    totals = dict(edges_proposed=0, edges_kept=0, lm_queries=0, lm_queries_novel=0, agenda_pops=0, unwindings=0)
    score = 0.0
    second_pass = 0.0  # CPU seconds of two-pass search's second pass (part of cpu_seconds)
    outputs = []
    at = {}
    cpu_started, wall_started = time.process_time(), time.perf_counter()

    def snapshot() -> dict:
        out = {"sentences": len(outputs), "model_cost": round(-score, 4),
               "cpu_seconds": round(time.process_time() - cpu_started, 3),
               "wall_seconds": round(time.perf_counter() - wall_started, 3), **totals}
        if second_pass:
            out["second_pass_cpu_seconds"] = round(second_pass, 3)
        if references is not None:
            from decoder.evaluate import corpus_bleu

            out["bleu"] = round(corpus_bleu(outputs, references[: len(outputs)]).score, 2)
        return out

    for words in sentences:
        translation = decoder.translate(words)
        for key in totals:
            totals[key] += int(translation.stats.get(key, 0))
        second_pass += float(translation.stats.get("second_pass_cpu_seconds", 0.0))
        score += translation.score
        outputs.append(translation.text)
        if len(outputs) in checkpoints and len(outputs) < len(sentences):
            at[str(len(outputs))] = snapshot()
    out = {"search": label, **parameters, **snapshot(), "load_average": round(os.getloadavg()[0], 2)}
    if at:
        out["at"] = at
    return out


def grid(cube_pop_limits, two_pass_runs) -> list[tuple[str, dict]]:
    """(search, settings) of every run: cube pruning's up to pop limit 300, then the two-pass runs
    interleaved by cost, cube pruning's larger pop limits last (the slowest)."""
    cube = [("cube", {"pop_limit": p}) for p in cube_pop_limits]
    two_pass = [("two-pass", {"pop_limit": p, "beam_size": items, "two_pass_beam": beam, "agenda_limit": agenda,
                              "max_pops": pops, **(more[0] if more else {})})
                for p, items, (beam, agenda, pops), *more in two_pass_runs]
    cheap = [run for run in cube if run[1]["pop_limit"] <= 100]
    return (cheap + two_pass[:5] + [run for run in cube if 100 < run[1]["pop_limit"] <= 300] + two_pass[5:10]
            + [run for run in cube if run[1]["pop_limit"] > 300] + two_pass[10:])


def run_key(search: str, settings: dict, sentences: int | None = None) -> str:
    """A run's identity in the --out file (settings left out are the defaults; sentences: how
    many verses, when given)."""
    values = {"search": search, **SETTING_DEFAULTS, **{k: settings[k] for k in SETTING_KEYS[1:] if k in settings}}
    values.update({k: float(values[k]) for k in FLOAT_SETTINGS if k in values})
    if sentences is not None:
        values["sentences"] = sentences
    return json.dumps(values, sort_keys=True)


def sweep(args, runs=None) -> int:
    """Decode args.test (its first args.sentences lines) once per run of `runs` (default: the
    grid of args.cube_pop_limits and TWO_PASS_RUNS, or args.runs), appending to args.out."""
    from decoder.config import load_config
    from decoder.decoder import Decoder
    from decoder.evaluate import read_lines
    from decoder.lm import LanguageModel
    from decoder.store import GrammarStore

    sentences = [line.split() for line in read_lines(args.test)][: args.sentences]
    references = read_lines(args.ref)[: args.sentences] if args.ref else None
    done = set()
    if os.path.exists(args.out) and args.resume:
        done = {run_key(run["search"], run, n) for run in read_runs(args.out)  # a checkpoint counts as a run
                for n in [run["sentences"], *map(int, run.get("at", {}))]}
    if runs is None:
        runs = parse_runs(args.runs) if getattr(args, "runs", None) else grid(args.cube_pop_limits, TWO_PASS_RUNS)
    runs = [(search, settings) for search, settings in runs if run_key(search, settings, len(sentences)) not in done]
    if not runs:
        return 0
    config = load_config(args.config)
    arguments = config.decoder_arguments()
    # One store and one LM object for both searches: same weights, same model, loaded once.
    arguments["store"] = GrammarStore.open(arguments["store"])
    arguments["lm"] = LanguageModel(arguments["lm"])
    decoders = {search: Decoder(**{**arguments, "search": search}) for search in ("cube", "two-pass")}
    defaults = decoders["cube"].search_settings
    for search, settings in runs:
        decoder = decoders[search]
        effective = {**defaults.as_dict(), **settings, "search": search}
        decoder.reconfigure(**effective)
        if search == "two-pass":  # every setting a two-pass run may vary, as it ran
            settings = {k: effective[k] for k in SETTING_KEYS[1:]}
        result = run(decoder, sentences, references, search, settings, tuple(getattr(args, "checkpoints", ()) or ()))
        with open(args.out, "a") as f:
            f.write(json.dumps(result) + "\n")
        print(json.dumps(result), file=sys.stderr, flush=True)
    return 0


def parse_runs(specs) -> list[tuple[str, dict]]:
    """Runs named on the command line: "cube pop_limit=100", "two-pass pop_limit=300 beam_size=100"."""
    out = []
    for spec in specs:
        search, *pairs = spec.split()
        settings = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            if key not in SETTING_KEYS[1:]:
                raise SystemExit(f"bench_two_pass: unknown setting {key!r} in run {spec!r} "
                                 f"(known: {', '.join(SETTING_KEYS[1:])})")
            if key == "second_pass_stop":
                settings[key] = value
            else:
                settings[key] = float(value) if key in FLOAT_SETTINGS else int(value)
        out.append((search, settings))
    return out


# The settings a run may vary, and their values when a record leaves them out (records written
# before a setting existed ran with these).
SETTING_KEYS = ("search", "pop_limit", "beam_size", "two_pass_beam", "agenda_limit", "max_pops", "first_pass_items",
                "first_pass_threshold", "second_pass_stop")
SETTING_DEFAULTS = {"beam_size": 0, "first_pass_items": 0, "first_pass_threshold": 0.0, "second_pass_stop": "budget"}
FLOAT_SETTINGS = ("two_pass_beam", "first_pass_threshold")


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
            lo, hi = max(value_lo, 1e-9), max(value_hi, 1e-9)  # (a 0.000 s run: no log of 0)
            return math.exp(math.log(lo) * (1 - t) + math.log(hi) * t)
    return None


def label(run: dict) -> str:
    if run["search"] == "cube":
        return f"cube pop {run['pop_limit']}"
    return f"two-pass pop {run['pop_limit']}{first_pass_label(run)}, " + second_pass_label(run)


def first_pass_label(run: dict) -> str:
    """The first pass's bounds besides the pop limit (empty: none)."""
    return "".join(
        [f", {run['beam_size']} items/cell" if run.get("beam_size") else "",
         f", stop at {run['first_pass_items']} items" if run.get("first_pass_items") else "",
         f", beta {run['first_pass_threshold']:g}" if run.get("first_pass_threshold") else ""])


def second_pass_label(run: dict) -> str:
    stop = run.get("second_pass_stop", "budget")
    return (f"beam {run['two_pass_beam']:g}, agenda {run['agenda_limit']}, pops {run['max_pops']}"
            + ("" if stop == "budget" else f", stop: {stop}"))


def table(runs: list[dict]) -> str:
    cube = [r for r in runs if r["search"] == "cube"]
    lines = ["| search | settings | model cost | novel LM queries | LM queries | CPU s | BLEU | "
             "cube CPU s at equal cost | CPU ratio | cube novel queries at equal cost | query ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    def order(r):
        return (r["search"], r["pop_limit"], r.get("beam_size", 0), r.get("first_pass_items", 0),
                r.get("first_pass_threshold", 0.0), second_pass_label(r) if r["search"] == "two-pass" else "")

    for run in sorted(runs, key=order):
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
    from matplotlib.ticker import NullFormatter

    from decoder.benchmark.plots import pyplot

    plt = pyplot()

    series = {"cube": [r for r in runs if r["search"] == "cube"]}
    for run in runs:
        if run["search"] == "two-pass":
            name = f"two-pass {second_pass_label(run)}{first_pass_label(run)}"
            series.setdefault(name, []).append(run)
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.6 + 0.16 * len(series)))
    colors = plt.cm.tab20.colors
    markers = "sD^v<>pPXh*"
    for index, (name, points) in enumerate(series.items()):
        points = sorted(points, key=lambda r: r["pop_limit"])
        style = dict(marker="o" if name == "cube" else markers[index % len(markers)],
                     linestyle="-" if name == "cube" else "--", label=name, color=colors[(2 * index) % 20 + index // 10 % 2])
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
    for axis in axes:
        axis.xaxis.set_minor_formatter(NullFormatter())
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, fontsize=7, loc="lower center", ncol=2, frameon=False)
    figure.tight_layout(rect=(0, 0.03 * len(series) / 2 + 0.04, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def runs_at(runs: list[dict], sentences: int | None = None) -> list[dict]:
    """The runs over the first `sentences` verses (default: the most common count): runs of that
    many, and longer runs' checkpoints at that many (a run of that many of the same settings wins)."""
    if sentences is None:
        counts = [run["sentences"] for run in runs]
        sentences = max(set(counts), key=lambda n: (counts.count(n), n)) if counts else 0
    out = {run_key(r["search"], r): r for r in runs if r["sentences"] == sentences}
    for r in runs:
        snapshot = r.get("at", {}).get(str(sentences))
        if snapshot and run_key(r["search"], r) not in out:
            settings = {k: v for k, v in r.items() if k in SETTING_KEYS}
            out[run_key(r["search"], r)] = {**settings, **snapshot, "from_run_of": r["sentences"]}
    return list(out.values())


def write_report(runs: list[dict], results_dir: str, name: str = "two_pass", records: list[dict] | None = None,
                 json_name: str | None = None) -> str:
    """json_name (default NAME).json (the records, default the runs), NAME.png (the runs) and the
    table (returned)."""
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, f"{json_name or name}.json"), "w") as f:
        json.dump(records if records is not None else runs, f, indent=1)
    plot(runs, os.path.join(results_dir, f"{name}.png"))
    return table(runs)




def results_section(runs: list[dict], command: str, png: str = "two_pass.png") -> str:
    """The two-pass section of results.md: how it was made, the figure, the table."""
    n = runs[0]["sentences"] if runs else 0
    load = sorted(r["load_average"] for r in runs if "load_average" in r)
    machine = f" Load average (1 min) at the end of a run: {load[0]:.1f}-{load[-1]:.1f}." if load else ""
    return "\n".join([
        SECTION_START, "", f"## Two-pass search (Venugopal et al. 2007) against cube pruning, {n} verses", "",
        f"`{command}`. Model cost: minus the summed model score of the 1-best (lower is better); novel "
        "LM queries: LM cache misses; CPU seconds of one process. \"cube CPU s at equal cost\" "
        "interpolates cube pruning's CPU seconds (and novel queries) at the two-pass run's model cost, "
        "linearly in log CPU between the cube runs around it; a ratio below 1: two-pass is cheaper." + machine,
        "", f"![two-pass against cube pruning]({png})", "", table(runs), "", SECTION_END, ""])


def update_results_md(path: str, section: str) -> None:
    """Put `section` into results.md in place of its previous version (or at the end)."""
    text = pathlib.Path(path).read_text(encoding="utf-8") if os.path.exists(path) else ""
    if SECTION_START in text and SECTION_END in text:
        head, rest = text.split(SECTION_START, 1)
        tail = rest.split(SECTION_END, 1)[1].lstrip("\n")
        text = head + section + tail
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "") + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def report(args) -> int:
    """The table and PNG of the runs over --sentences verses; the JSON: every record of the file."""
    records = read_runs(args.report)
    runs = runs_at(records, args.sentences if args.sentences_given else None)
    print(write_report(runs, args.results_dir, args.name, records, args.json_name))
    return 0


# ---------------------------------------------------------------------------- cky bench --two-pass

QUICK_CUBE_POP_LIMITS = (1, 10)
QUICK_TWO_PASS_RUNS = ((10, 0, TIGHT), (10, 2, DEFAULT))


def bench_command(out: str, sentences: int | None = None, quick: bool = False, work: str | None = None,
                  config: str | None = None, command: str = "cky bench --two-pass", log=print) -> int:
    """`cky bench --two-pass`: the sweep on the demo config of the full Bible system (--quick: the
    fixture system, two cube and two two-pass runs), then the report and results.md's section."""
    from decoder import experiment

    if quick:
        system = experiment.fixture_system(work)
        config = config or experiment.write_decoder_config(
            system, experiment.store_for(system, "icr"), os.path.join(work, "two_pass", "config.toml"))
        test, ref = system.test_src, system.test_ref
        cube_pop_limits, two_pass_runs = QUICK_CUBE_POP_LIMITS, QUICK_TWO_PASS_RUNS
    else:
        config = config or demo_config()
        if not os.path.exists(config):
            log(f"cky bench --two-pass: no demo config {config} (run `cky demo` first, or give "
                "--two-pass-config CONFIG)")
            return 1
        data = os.path.dirname(os.path.dirname(os.path.abspath(config)))
        test, ref = os.path.join(data, "test.es"), os.path.join(data, "test.en")
        cube_pop_limits, two_pass_runs = CUBE_POP_LIMITS, TWO_PASS_RUNS
    os.makedirs(out, exist_ok=True)
    runs_path = os.path.join(out, "two_pass.jsonl")
    n = sentences or (4 if quick else 200)
    args = argparse.Namespace(config=config, test=test, ref=ref if os.path.exists(ref) else None, sentences=n,
                              out=runs_path, resume=True, checkpoints=())
    code = sweep(args, grid(cube_pop_limits, two_pass_runs))
    if code:
        return code
    records = read_runs(runs_path)
    runs = runs_at(records, n)
    print(write_report(runs, out, records=records))
    update_results_md(os.path.join(out, "results.md"), results_section(runs, command))
    log(f"two-pass results in {out} (two_pass.json, two_pass.png, results.md)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="decoder config (TOML): store, lm, glue, weights")
    parser.add_argument("--test", help="source sentences, one per line, tokenized")
    parser.add_argument("--ref", help="reference translations (for BLEU)")
    parser.add_argument("--sentences", type=int, default=None, help="sentences of a sweep (default 200); with "
                        "--report: report the runs over this many (runs of more: their checkpoint)")
    parser.add_argument("--checkpoints", type=int, nargs="*", default=[],
                        help="also record the totals after the first N sentences of each run")
    parser.add_argument("--runs", nargs="+", default=None, metavar="RUN",
                        help='run these instead of the grid: "cube pop_limit=100", '
                             '"two-pass pop_limit=300 beam_size=100 ..."')
    parser.add_argument("--cube-pop-limits", type=int, nargs="*", default=list(CUBE_POP_LIMITS))
    parser.add_argument("--out", help="JSON lines file: one run per line, appended")
    parser.add_argument("--resume", action="store_true", help="skip the runs --out already has")
    parser.add_argument("--report", metavar="RUNS", help="JSON lines of a sweep: write the JSON, PNG and table")
    parser.add_argument("--results-dir", default=RESULTS)
    parser.add_argument("--name", default="two_pass", help="with --report: NAME.json and NAME.png")
    parser.add_argument("--json-name", default=None, help="with --report: the JSON's name (default NAME)")
    args = parser.parse_args(argv)
    args.sentences_given = args.sentences is not None
    if args.sentences is None:
        args.sentences = 200
    if args.report:
        return report(args)
    if not (args.config and args.test and args.out):
        parser.error("a sweep needs --config, --test and --out (or --report RUNS)")
    return sweep(args)


if __name__ == "__main__":
    sys.exit(main())
