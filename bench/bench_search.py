"""Issue 16's search benchmarks on one decoder config (the full Bible system's demo config by default).

(a) model cost (minus the summed model score of the 1-best) against CPU seconds and against
    novel LM queries (LM cache misses) for `cube` and `incremental` search over pop limits 1-1000
    (Heafield, Koehn and Lavie 2013, Figures 3-4), and at equal model cost the CPU and queries
    of `incremental` as a share of cube pruning's (interpolated between the cube runs around it);
(b) CPU seconds per verse against sentence length (bins of 5 tokens) for each search at pop limit
    100, with the exponent fitted by least squares of log seconds on log length (goal: <= 3);
(c) `translate_batch(..., workers=1)` against `workers=2`: sentences per second and their ratio
    (goal >= 1.8), and the memory of each worker process from /proc/PID/smaps_rollup (Rss; Pss,
    which splits shared pages between the processes that map them) and, per mapped file of the
    store and the LM, how much of it each worker maps and how much of that is shared;
(d) the peak RSS (its own ru_maxrss: bench.child_usage) of one `cky translate` process decoding the verses (goal < 0.7 GB);
and, from the runs of (a), how often items recombine only because KenLM minimized their states
(`lm_state_minimized_recombinations` of ext/_chart.pyx: their first or last order-1 words differ).

Every run is one JSON line appended to --out as it finishes (--resume skips the runs it has), so
a long sweep can be watched, cut short, and continued; the report (at the end, or alone with
--report) writes search.json (with the machine: bench.machine), search.png and search.md.

    python -m bench.bench_search                     # sweep, workers, peak RSS, report (~30 min)
    python -m bench.bench_search --resume            # continue a cut-short sweep
    python -m bench.bench_search --workers-only      # (c) and (d) again (a quiet machine: ~2 min)
    python -m bench.bench_search --report bench/results/search.jsonl
    cky bench --searches                             # the same as the first (with --resume)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

from bench import RESULTS
from decoder.benchmark.report import number_cell
from bench.bench_two_pass import cube_cpu_at_cost, read_runs
from bench.child_usage import run_measured

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIBLE_BUILD = os.path.join(REPO, "models", "bible-es-en", "build")

SEARCHES = ("cube", "incremental")
POP_LIMITS = (1, 3, 10, 30, 100, 300, 1000)
LENGTH_POP_LIMIT = 100  # (b) and the recombination counts are at this pop limit
LENGTH_BIN = 5          # tokens per length bin of (b)
# Totals of a run: the search statistics summed over its verses.
TOTALS = ("edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel", "recombinations",
          "lm_state_minimized_recombinations")
# Counting the recombinations that only KenLM's state minimization allows costs about 5% more instructions
# (ChartSearchDriver.count_minimized_recombinations): the timed runs leave it off, and a "minimization"
# run per search at LENGTH_POP_LIMIT counts them.


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------------------- (a), (b): the sweep

def grid(searches, pop_limits) -> list[tuple[str, int]]:
    """(search, pop limit) of every run, cheapest first: both searches at one pop limit, then the next."""
    return [(search, pop_limit) for pop_limit in sorted(pop_limits) for search in searches]


def run_key(run: dict) -> tuple:
    return run.get("kind"), run.get("search"), run.get("pop_limit"), run.get("sentences")


def decode_run(decoder, sentences, references, search: str, pop_limit: int, kind: str = "sweep") -> dict:
    """Decode every sentence with the decoder as configured: totals, BLEU and per-verse values;
    kind "minimization": with the minimized recombinations counted."""
    from decoder.evaluate import corpus_bleu

    decoder.chart.count_minimized_recombinations = kind == "minimization"
    totals = dict.fromkeys(TOTALS, 0)
    verses = {"words": [], "cpu_seconds": [], "model_score": [], "recombinations": [],
              "lm_state_minimized_recombinations": []}
    outputs = []
    started_load = load_average()
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    for words in sentences:
        translation = decoder.translate(words)
        stats = translation.stats
        for key in totals:
            totals[key] += int(stats.get(key, 0))
        verses["words"].append(len(words))
        verses["cpu_seconds"].append(round(stats.get("cpu_seconds", 0.0), 5))
        verses["model_score"].append(round(translation.score, 4))
        verses["recombinations"].append(int(stats.get("recombinations", 0)))
        verses["lm_state_minimized_recombinations"].append(int(stats.get("lm_state_minimized_recombinations", 0)))
        outputs.append(translation.text)
    cpu = time.process_time() - cpu_started
    decoder.chart.count_minimized_recombinations = False
    if kind != "minimization":
        del verses["lm_state_minimized_recombinations"], totals["lm_state_minimized_recombinations"]
    run = {"kind": kind, "search": search, "pop_limit": pop_limit, "sentences": len(sentences),
           "model_cost": round(-sum(verses["model_score"]), 4), "cpu_seconds": round(cpu, 3),
           "wall_seconds": round(time.perf_counter() - wall_started, 3), **totals,
           "load_average": [started_load, load_average()], "verses": verses}
    if references is not None:
        # the verses are tokenized (as the Bible system scores them: decoder.experiment, tokenize "none")
        run["bleu"] = round(corpus_bleu(outputs, references[: len(outputs)], tokenize="none").score, 2)
    return run


def read_sentences(path: str, count: int) -> list[list[str]]:
    from decoder.evaluate import read_lines

    return [line.split() for line in read_lines(path)][:count]


def sweep(args) -> None:
    from decoder.config import load_config
    from decoder.decoder import Decoder
    from decoder.evaluate import read_lines
    from decoder.lm import LanguageModel
    from decoder.store import GrammarStore

    sentences = read_sentences(args.test, args.sentences)
    references = read_lines(args.ref)[: len(sentences)] if args.ref and os.path.exists(args.ref) else None
    done = {run_key(run) for run in read_runs(args.out)} if args.resume and os.path.exists(args.out) else set()
    runs = [("sweep", search, pop) for search, pop in grid(args.searches, args.pop_limits)]
    runs += [("minimization", search, LENGTH_POP_LIMIT) for search in args.searches]
    todo = [run for run in runs if (*run, len(sentences)) not in done]
    if not todo:
        return
    arguments = load_config(args.config).decoder_arguments()
    # One store and one LM object for both searches: the same weights and model, loaded once.
    arguments["store"] = GrammarStore.open(arguments["store"])
    arguments["lm"] = LanguageModel(arguments["lm"])
    decoders = {}
    for kind, search, pop_limit in todo:
        if search not in decoders:
            decoders[search] = Decoder(**{**arguments, "search": search})
        decoder = decoders[search]
        decoder.reconfigure(pop_limit=pop_limit)
        run = decode_run(decoder, sentences, references, search, pop_limit, kind)
        append_run(args.out, run)
        log(f"{kind}: {search} pop {pop_limit}: model cost {run['model_cost']:.2f}, {run['cpu_seconds']:.1f} CPU s, "
            f"{run['lm_queries_novel']:,} novel LM queries, {run['recombinations']:,} recombinations, "
            f"load {run['load_average'][1]}")


def append_run(path: str, run: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(run) + "\n")


# ---------------------------------------------------------------------------- (c), (d): processes

def read_memory(pid: int | str = "self") -> dict:
    """{field: MB} of /proc/PID/smaps_rollup (Rss, Pss, Shared_Clean, Private_Dirty, ...)."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            name, _, rest = line.partition(":")
            parts = rest.split()
            if len(parts) == 2 and parts[1] == "kB":
                out[name.strip()] = round(int(parts[0]) / 1024, 1)
    return out


def mapped_files(pid: int | str, prefixes) -> dict:
    """{path: {Rss, Pss, Shared, Private} in MB} of the files under `prefixes` that process PID maps."""
    prefixes = [os.path.realpath(p) for p in prefixes]
    out: dict = {}
    current = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):  # a mapping's header: address range ... path
                fields = line.split()
                path = fields[5] if len(fields) >= 6 else ""
                current = path if any(path == p or path.startswith(p + os.sep) for p in prefixes) else None
                if current is not None:
                    out.setdefault(current, {"Rss": 0.0, "Pss": 0.0, "Shared": 0.0, "Private": 0.0})
            elif current is not None:
                name = first.rstrip(":")
                key = {"Rss": "Rss", "Pss": "Pss", "Shared_Clean": "Shared", "Shared_Dirty": "Shared",
                       "Private_Clean": "Private", "Private_Dirty": "Private"}.get(name)
                if key:
                    out[current][key] = round(out[current][key] + int(line.split()[1]) / 1024, 1)
    return out


_MODEL_PATHS: list[str] = []  # the store directory and LM file, for the workers' mapped_files
MEMORY_EVERY_SECONDS = 1.0     # a process reads its memory at most this often (reading smaps takes ms)
_last_memory_reading = {}      # pid -> time.monotonic() of its last reading


def translate_measuring_memory(decoder, sentence: str) -> dict:
    """decoder.batch job: translate; at most once a second (and on the first sentence), read this
    process's memory too (smaps_rollup and the mappings of the model's files)."""
    translation = decoder.translate(sentence)
    out = {"pid": os.getpid(), "score": translation.score, "memory": None, "files": None}
    now = time.monotonic()
    if now - _last_memory_reading.get(os.getpid(), -math.inf) >= MEMORY_EVERY_SECONDS:
        _last_memory_reading[os.getpid()] = now
        out["memory"], out["files"] = read_memory(), mapped_files("self", _MODEL_PATHS)
    return out


def measure_workers(config: str, sentences: list[str], workers=(1, 2), pop_limit: int = LENGTH_POP_LIMIT) -> dict:
    """(c): sentences per second of translate_batch with 1 and 2 workers, and each process's memory."""
    from decoder.batch import translate_batch
    from decoder.config import load_config
    from decoder.decoder import Decoder

    arguments = load_config(config).decoder_arguments()
    _MODEL_PATHS[:] = [os.fspath(arguments["store"]), os.fspath(arguments["lm"])]
    decoder = Decoder.from_config(config, pop_limit=pop_limit)
    out = {"kind": "workers", "sentences": len(sentences), "pop_limit": pop_limit, "search": decoder.settings["search"],
           "load_average_before": load_average(), "parent_after_load": read_memory(), "runs": {}}
    scores = {}
    # The most workers first: forked workers then share a parent that has only loaded the model, as
    # in `cky translate --workers N` (after an in-process run, the parent's chart and LM cache pages
    # would be inherited too).
    for n in sorted(workers, reverse=True):
        started = time.perf_counter()
        results = translate_batch(decoder, sentences, workers=n, job=translate_measuring_memory)
        seconds = time.perf_counter() - started
        failures = [r for r in results if not isinstance(r, dict)]
        if failures:
            raise RuntimeError(f"{len(failures)} sentences failed with {n} workers: {failures[0].error}")
        last = {}
        for result in results:  # each process's last reading
            if result["memory"] is not None:
                last[result["pid"]] = result
        _last_memory_reading.clear()  # the in-process run's next reading is not skipped
        scores[n] = [round(r["score"], 4) for r in results]
        out["runs"][str(n)] = {
            "seconds": round(seconds, 3), "sentences_per_second": round(len(sentences) / seconds, 3),
            "processes": [{"pid": pid, "sentences": sum(r["pid"] == pid for r in results),
                           "memory": r["memory"], "files": r["files"]} for pid, r in last.items()],
            "load_average_after": load_average()}
        log(f"{n} worker(s): {len(sentences) / seconds:.2f} sentences/s, load {load_average()}")
    for n in workers:
        out["runs"][str(n)]["same_translations_as_1_worker"] = scores[n] == scores.get(1, scores[n])
    out["runs"] = {str(n): out["runs"][str(n)] for n in sorted(workers)}
    one, two = out["runs"].get("1"), out["runs"].get("2")
    if one and two:
        out["speedup_2_workers"] = round(two["sentences_per_second"] / one["sentences_per_second"], 3)
    return out


def measure_peak_rss(config: str, test_lines: list[str], search: str = "cube",
                     pop_limit: int = LENGTH_POP_LIMIT, source_name: str = "TEST") -> dict:
    """(d): the peak RSS of one `cky translate` process decoding these lines (with loading; bench.child_usage)."""
    with tempfile.TemporaryDirectory(prefix="bench-search-") as work:
        source, output = os.path.join(work, "test.es"), os.path.join(work, "test.out")
        with open(source, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in test_lines))
        command = [sys.executable, "-m", "decoder.cli", "translate", "--config", os.path.abspath(config),
                   "--search", search, "--pop-limit", str(pop_limit), "--input", source, "--output", output,
                   "--quiet"]
        before = load_average()
        started = time.perf_counter()
        with tempfile.TemporaryFile() as stderr:
            usage = run_measured(command, cwd=REPO, stderr=stderr)
            seconds = time.perf_counter() - started
            stderr.seek(0)
            if usage["exit_code"] != 0:
                raise RuntimeError(f"`{' '.join(command)}` exited with {usage['exit_code']}: "
                                   f"{stderr.read().decode('utf-8', 'replace')[-2000:]}")
        with open(output, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
    shown = ["cky" if word == "decoder.cli" else word for word in command[2:]]  # as a user types it
    shown[shown.index("--input") + 1] = f"<the first {len(test_lines)} lines of {source_name}>"
    shown[shown.index("--output") + 1] = "OUT"
    return {"kind": "peak_rss", "command": " ".join(shown), "sentences": len(test_lines), "lines_out": lines,
            "search": search, "pop_limit": pop_limit, "peak_rss_mb": round(usage["peak_rss_mb"], 1),
            "user_seconds": round(usage["user_seconds"], 2), "system_seconds": round(usage["system_seconds"], 2),
            "wall_seconds": round(seconds, 2), "load_average": [before, load_average()]}


def processes(args) -> None:
    from decoder.evaluate import read_lines

    lines = read_lines(args.test)[: args.workers_sentences]
    peak = measure_peak_rss(args.config, lines, source_name=args.test)
    append_run(args.out, peak)
    log(f"peak RSS of one `cky translate`: {peak['peak_rss_mb']:.0f} MB")
    append_run(args.out, measure_workers(args.config, lines))


# ---------------------------------------------------------------------------- report

def fit_exponent(lengths, seconds) -> dict:
    """seconds ~ c * length^k: k and c by least squares of log seconds on log length (verses with
    positive length and seconds)."""
    import numpy as np

    points = [(math.log(n), math.log(s)) for n, s in zip(lengths, seconds) if n > 0 and s > 0]
    if len(points) < 2 or len({x for x, _ in points}) < 2:
        return {"exponent": None, "coefficient": None, "verses": len(points)}
    x, y = np.array(points).T
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    r2 = 1.0 - float((residual ** 2).sum()) / float(((y - y.mean()) ** 2).sum() or 1.0)
    return {"exponent": round(float(slope), 3), "coefficient": float(math.exp(intercept)), "r2": round(r2, 3),
            "verses": len(points)}


def length_bins(lengths, seconds, width: int = LENGTH_BIN) -> list[dict]:
    """Verses grouped by length into bins (1-5, 6-10, ...): count and mean seconds per verse."""
    bins: dict[int, list[float]] = {}
    for n, s in zip(lengths, seconds):
        if n > 0:
            bins.setdefault((n - 1) // width, []).append(s)
    return [{"lengths": f"{k * width + 1}-{(k + 1) * width}", "verses": len(v),
             "seconds_per_verse": round(sum(v) / len(v), 5)} for k, v in sorted(bins.items())]


def latest(runs: list[dict], kind: str) -> dict | None:
    found = [run for run in runs if run.get("kind") == kind]
    return found[-1] if found else None


def summarize(runs: list[dict]) -> dict:
    """The figures of the report from the runs (the last run of each key wins)."""
    by_key = {}
    for run in runs:
        if run.get("kind", "sweep") == "sweep":
            by_key[run_key({"kind": "sweep", **run})] = run
    runs = list({run_key(run): run for run in runs}.values())  # the last run of each key
    sweep_runs = sorted(by_key.values(), key=lambda r: (r["search"], r["pop_limit"]))
    cube = [r for r in sweep_runs if r["search"] == "cube"]
    model_cost = []
    for run in sweep_runs:
        row = {k: run.get(k) for k in ("search", "pop_limit", "sentences", "model_cost", "cpu_seconds",
                                       "lm_queries", "lm_queries_novel", "bleu")}
        if run["search"] != "cube" and cube:
            cpu = cube_cpu_at_cost(cube, run["model_cost"])
            queries = cube_cpu_at_cost(cube, run["model_cost"], "lm_queries_novel")
            row["cube_cpu_seconds_at_equal_cost"] = round(cpu, 3) if cpu else None
            row["cpu_ratio_to_cube"] = round(run["cpu_seconds"] / cpu, 3) if cpu else None
            row["cube_novel_queries_at_equal_cost"] = round(queries) if queries else None
            row["novel_query_ratio_to_cube"] = round(run["lm_queries_novel"] / queries, 3) if queries else None
            same = next((c for c in cube if c["pop_limit"] == run["pop_limit"]), None)
            if same and "verses" in same and "verses" in run:
                pairs = list(zip(run["verses"]["model_score"], same["verses"]["model_score"]))
                row["better_tied_worse_than_cube_at_same_pop_limit"] = [
                    sum(a > b + 1e-4 for a, b in pairs), sum(abs(a - b) <= 1e-4 for a, b in pairs),
                    sum(a < b - 1e-4 for a, b in pairs)]
        model_cost.append(row)
    lengths, recombination = {}, {}
    for run in sweep_runs:
        if run["pop_limit"] == LENGTH_POP_LIMIT and "words" in run.get("verses", {}):
            verses = run["verses"]
            lengths[run["search"]] = {"fit": fit_exponent(verses["words"], verses["cpu_seconds"]),
                                      "bins": length_bins(verses["words"], verses["cpu_seconds"])}
    for run in runs:
        if run.get("kind") != "minimization":
            continue
        verses = run["verses"]
        timed = by_key.get(("sweep", run["search"], run["pop_limit"], run["sentences"]))
        total, minimized = sum(verses["recombinations"]), sum(verses["lm_state_minimized_recombinations"])
        n = max(1, len(verses["words"]))
        shares = [m / r for m, r in zip(verses["lm_state_minimized_recombinations"], verses["recombinations"]) if r]
        recombination[run["search"]] = {
            "pop_limit": run["pop_limit"], "same_model_cost_as_timed_run": (
                abs(timed["model_cost"] - run["model_cost"]) < 1e-3 if timed else None),
            "cpu_seconds_counting": run["cpu_seconds"], "cpu_seconds_timed_run": timed["cpu_seconds"] if timed else None,
            "recombinations_per_verse": round(total / n, 1), "lm_state_minimized_per_verse": round(minimized / n, 1),
            "share_of_recombinations": round(minimized / total, 4) if total else None,
            "share_per_verse_mean": round(sum(shares) / len(shares), 4) if shares else None,
            "share_per_verse_min_max": [round(min(shares), 4), round(max(shares), 4)] if shares else None}
    loads = [load[0] for run in sweep_runs for load in run.get("load_average", [])]
    return {"model_cost": model_cost, "sweep_load_average_1min": [min(loads), max(loads)] if loads else None,
            "length": lengths, "recombination": recombination,
            "workers": latest(runs, "workers"), "peak_rss": latest(runs, "peak_rss")}


_cell = number_cell


def markdown(summary: dict, machine: dict) -> str:
    lines = ["# Search benchmarks (issue 16): cube pruning and incremental search", "",
             f"{machine.get('date')}, commit {machine.get('git_commit')}, {machine.get('cpu')} "
             f"({machine.get('cpus')} CPUs), load average at report {machine.get('load_average')}. CPU seconds "
             f"of one process (time.process_time); the machine is shared, so compare ratios within a run.", ""]
    rows = summary["model_cost"]
    if rows:
        n = rows[0]["sentences"]
        lines += [f"## (a) Model cost against CPU seconds and novel LM queries ({n} verses)", "",
                  "Model cost: minus the summed model score of the 1-best. Equal-cost columns: cube pruning's CPU "
                  "seconds / novel queries at the incremental run's model cost, interpolated in log scale between "
                  "the cube runs around it (`-`: outside cube's range). 1-minute load average during the runs: "
                  f"{summary.get('sweep_load_average_1min')}.", "",
                  "| search | pop limit | model cost | CPU s | novel LM queries | LM queries | BLEU | cube CPU s at "
                  "equal cost | CPU ratio | novel query ratio | better / tied / worse than cube (same pop) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            btw = r.get("better_tied_worse_than_cube_at_same_pop_limit")
            lines.append("| " + " | ".join([
                r["search"], str(r["pop_limit"]), _cell(r["model_cost"]), _cell(r["cpu_seconds"]),
                _cell(r["lm_queries_novel"]), _cell(r["lm_queries"]), _cell(r.get("bleu")),
                _cell(r.get("cube_cpu_seconds_at_equal_cost")) if r["search"] != "cube" else "",
                _cell(r.get("cpu_ratio_to_cube")) if r["search"] != "cube" else "",
                _cell(r.get("novel_query_ratio_to_cube")) if r["search"] != "cube" else "",
                " / ".join(map(str, btw)) if btw else ""]) + " |")
    if summary["length"]:
        searches = list(summary["length"])
        lines += ["", f"## (b) CPU seconds per verse against sentence length (pop limit {LENGTH_POP_LIMIT})", "",
                  "Fitted exponent k of seconds ~ c * length^k (least squares of log seconds on log length, "
                  "one point per verse); goal: k <= 3.", ""]
        lines += ["| search | exponent k | R^2 | verses |", "|---|---:|---:|---:|"]
        for s in searches:
            fit = summary["length"][s]["fit"]
            lines.append(f"| {s} | {_cell(fit['exponent'], 3)} | {_cell(fit.get('r2'), 3)} | {fit['verses']} |")
        bins = {s: {b["lengths"]: b for b in summary["length"][s]["bins"]} for s in searches}
        labels = sorted({label for table in bins.values() for label in table}, key=lambda t: int(t.split("-")[0]))
        lines += ["", "| length | verses | " + " | ".join(f"{s} s/verse" for s in searches) + " |",
                  "|---|---:|" + "---:|" * len(searches)]
        for label in labels:
            count = next(table[label]["verses"] for table in bins.values() if label in table)
            lines.append(f"| {label} | {count} | " + " | ".join(
                _cell(bins[s][label]["seconds_per_verse"], 4) if label in bins[s] else "-" for s in searches) + " |")
    workers = summary.get("workers")
    if workers:
        lines += ["", f"## (c) Workers ({workers['sentences']} verses, {workers['search']} pop limit "
                      f"{workers['pop_limit']}, `python -m bench.bench_search --workers-only`)", "",
                  f"Load average before: {workers['load_average_before']} (2 cores; a busy machine depresses the "
                  f"2-worker figure). Speed-up of 2 workers: **{_cell(workers.get('speedup_2_workers'))}x** "
                  f"(goal >= 1.8).", "",
                  "| workers | seconds | sentences/s | same translations | process | sentences | Rss MB | Pss MB | "
                  "shared MB | private MB | model files: Rss / Pss / private MB |",
                  "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|"]
        for n, run in workers["runs"].items():
            for p, process in enumerate(run["processes"]):
                m = process["memory"]
                shared = m.get("Shared_Clean", 0) + m.get("Shared_Dirty", 0)
                private = m.get("Private_Clean", 0) + m.get("Private_Dirty", 0)
                files = process.get("files", {})
                model = (f"{sum(f['Rss'] for f in files.values()):.0f} / {sum(f['Pss'] for f in files.values()):.0f}"
                         f" / {sum(f['Private'] for f in files.values()):.0f}") if files else "none mapped"
                first = [n, _cell(run["seconds"]), _cell(run["sentences_per_second"]),
                         str(run["same_translations_as_1_worker"])] if p == 0 else ["", "", "", ""]
                lines.append("| " + " | ".join(first + [f"worker {p + 1}" if n != "1" else "in process",
                                                         str(process["sentences"]), _cell(m.get("Rss"), 0),
                                                         _cell(m.get("Pss"), 0), _cell(shared, 0),
                                                         _cell(private, 0), model]) + " |")
    peak = summary.get("peak_rss")
    if peak:
        lines += ["", "## (d) Peak memory of one decoding process", "",
                  f"`{peak['command']}` ({peak['sentences']} verses, with loading): peak RSS "
                  f"**{peak['peak_rss_mb']:,.0f} MB** (goal < 700 MB), {peak['user_seconds']} s user CPU, "
                  f"load {peak['load_average'][0]}."]
    if summary["recombination"]:
        lines += ["", f"## KenLM state minimization: recombinations it allows (pop limit {LENGTH_POP_LIMIT})", "",
                  "`lm_state_minimized_recombinations` (ext/_chart.pyx): hypotheses recombined into an item whose "
                  "first or last order-1 target words differ from theirs (those of the item's first hypothesis), "
                  "i.e. that would be a separate item without KenLM's state minimization. Counted in a separate "
                  "run (`ChartSearchDriver.count_minimized_recombinations`; the timed runs above do not count), "
                  "with the same search result. Its cost, by callgrind's instruction count inside the cell "
                  "search (4 verses, cube pop limit 100): +4.9% counting, +0.3% not counting (the CPU seconds "
                  "below are too noisy on a shared machine to show it).", "",
                  "| search | recombinations / verse | of which only by minimization / verse | share | "
                  "share per verse: mean (min-max) | CPU s counting / not counting |",
                  "|---|---:|---:|---:|---|---|"]
        for s, r in summary["recombination"].items():
            low_high = r["share_per_verse_min_max"]
            lines.append(f"| {s} | {_cell(r['recombinations_per_verse'], 1)} | "
                         f"{_cell(r['lm_state_minimized_per_verse'], 1)} | {_cell(r['share_of_recombinations'], 3)} | "
                         f"{_cell(r['share_per_verse_mean'], 3)}"
                         + (f" ({low_high[0]:.3f}-{low_high[1]:.3f})" if low_high else "")
                         + f" | {_cell(r['cpu_seconds_counting'], 1)} / {_cell(r['cpu_seconds_timed_run'], 1)} |")
    lines += ["", "![search.png](search.png)"]
    return "\n".join(lines) + "\n"


def plot(runs: list[dict], summary: dict, path: str) -> None:
    import numpy as np

    from decoder.benchmark.plots import pyplot

    plt = pyplot()

    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    sweep_runs = [r for r in runs if r.get("kind", "sweep") == "sweep"]
    for search in sorted({r["search"] for r in sweep_runs}):
        points = sorted((r for r in sweep_runs if r["search"] == search), key=lambda r: r["pop_limit"])
        style = dict(marker="o" if search == "cube" else "s", label=search)
        axes[0].plot([r["cpu_seconds"] for r in points], [r["model_cost"] for r in points], **style)
        axes[1].plot([r["lm_queries_novel"] for r in points], [r["model_cost"] for r in points], **style)
        for r in points:
            axes[0].annotate(str(r["pop_limit"]), (r["cpu_seconds"], r["model_cost"]), fontsize=7,
                             textcoords="offset points", xytext=(3, 3))
        at = next((r for r in points if r["pop_limit"] == LENGTH_POP_LIMIT and "words" in r.get("verses", {})), None)
        if at:
            words, seconds = np.array(at["verses"]["words"]), np.array(at["verses"]["cpu_seconds"])
            keep = (words > 0) & (seconds > 0)
            scatter = axes[2].scatter(words[keep], seconds[keep], s=6, alpha=0.4, marker=style["marker"])
            fit = summary["length"].get(search, {}).get("fit", {})
            if fit.get("exponent") is not None:
                xs = np.linspace(max(1, words[keep].min()), words[keep].max(), 50)
                axes[2].plot(xs, fit["coefficient"] * xs ** fit["exponent"], color=scatter.get_facecolor()[0][:3],
                             label=f"{search}: k = {fit['exponent']:.2f}")
    costs = sorted(r["model_cost"] for r in sweep_runs)
    if len(costs) > 4:  # pop limit 1 (and 3) would squash the rest: clip the top
        top = costs[-3] + 0.1 * (costs[-3] - costs[0])
        for axis in axes[:2] if top > costs[0] else ():
            axis.set_ylim(costs[0] - 0.05 * (top - costs[0]), top)
    n = sweep_runs[0]["sentences"] if sweep_runs else 0
    axes[0].set(xscale="log", xlabel="CPU seconds", ylabel=f"model cost ({n} verses)",
                title="model cost vs CPU seconds (pop limits)")
    axes[1].set(xscale="log", xlabel="novel LM queries (cache misses)", ylabel="model cost",
                title="model cost vs novel LM queries")
    axes[2].set(xscale="log", yscale="log", xlabel="source words", ylabel="CPU seconds per verse",
                title=f"seconds vs length, pop limit {LENGTH_POP_LIMIT}")
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    axes[2].set_xticks([5, 10, 20, 40, 80])
    axes[2].xaxis.set_major_formatter(ScalarFormatter())
    axes[2].xaxis.set_minor_formatter(NullFormatter())
    for axis in axes:
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def report(runs_path: str, results_dir: str) -> dict:
    from bench.machine import machine_info

    runs = read_runs(runs_path)
    summary = summarize(runs)
    machine = machine_info()
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "search.json"), "w") as f:
        json.dump({"machine": machine, "runs_file": os.path.relpath(runs_path, REPO), **summary}, f, indent=1)
        f.write("\n")
    text = markdown(summary, machine)
    with open(os.path.join(results_dir, "search.md"), "w") as f:
        f.write(text)
    plot(runs, summary, os.path.join(results_dir, "search.png"))
    print(text)
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=os.path.join(BIBLE_BUILD, "demo", "config.toml"),
                        help="decoder config (default: the full Bible build's demo config)")
    parser.add_argument("--test", default=None, help="source verses (default: test.es of the Bible build)")
    parser.add_argument("--ref", default=None, help="references, for BLEU (default: test.en beside --test)")
    parser.add_argument("--sentences", type=int, default=200, help="the first N verses of --test")
    parser.add_argument("--searches", nargs="+", default=list(SEARCHES))
    parser.add_argument("--pop-limits", type=int, nargs="+", default=list(POP_LIMITS))
    parser.add_argument("--workers-sentences", type=int, default=200, help="verses of (c) and (d)")
    parser.add_argument("--out", default=os.path.join(RESULTS, "search.jsonl"),
                        help="JSON lines: one run per line, appended")
    parser.add_argument("--resume", action="store_true", help="skip the runs --out already has")
    parser.add_argument("--workers-only", action="store_true", help="measure (c) and (d) again, then report")
    parser.add_argument("--no-workers", action="store_true", help="the sweep without (c) and (d)")
    parser.add_argument("--report", metavar="RUNS", help="only write the report of these runs (JSON lines)")
    parser.add_argument("--results-dir", default=RESULTS, help="where search.json, .png and .md go")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.report:
        report(args.report, args.results_dir)
        return 0
    args.test = args.test or os.path.join(BIBLE_BUILD, "test.es")
    if args.ref is None:
        args.ref = os.path.splitext(args.test)[0] + ".en"
    for path in (args.config, args.test):
        if not os.path.exists(path):
            parser.error(f"{path} does not exist (build the Bible system, or give --config and --test)")
    if not args.workers_only:
        sweep(args)
    have = {run.get("kind") for run in read_runs(args.out)} if os.path.exists(args.out) else set()
    if args.workers_only or (not args.no_workers and not ({"workers", "peak_rss"} <= have and args.resume)):
        processes(args)
    report(args.out, args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
