"""Benchmark of `cky compile` on a real rule table: CPU seconds and peak memory of one process.

    python -m bench.bench_compile --table rules.gz [--strategy icr] [--reference]
                                  [--baseline-tree ../other-checkout] [--output bench/results/compile.json]

Each variant compiles the table in a fresh process (decoder.store.build_store, what `cky compile`
runs) and is measured from outside: user + system CPU seconds and peak RSS of that process
(bench.child_usage), with the CPU seconds of each step (read, binarize, compile, write) from inside.
Variants: this tree (the compiled table reader and the kernel's array path); with --reference,
this tree's reference path (read_rules and BinaryRule objects); with --baseline-tree, the
default path of another checkout (e.g. the code before a change), run from that directory.
Every variant's store must be byte-identical (meta.json but for its times): the benchmark
fails otherwise. The machine may be shared: the load average is recorded with every run, and
--repeat keeps the run with the least CPU time. Writes JSON with machine info and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from bench import RESULTS as RESULTS_DIR
from bench.child_usage import run_measured
from bench.machine import machine_info

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(RESULTS_DIR, "compile.json")

CHILD = """
import json, sys
from decoder.store.build import build_store
table, store, strategy, reference = sys.argv[1:5]
build = build_store(table, store, strategy, **({"reference": True} if reference == "1" else {}))
print(json.dumps({"n_read": build.n_read, "binary_rules": build.meta["n_rules"],
                  "seconds": build.timings, "cpu_seconds": getattr(build, "cpu_timings", None)}))
"""


def store_files(directory: str) -> dict:
    """Every file of a store: bytes, and meta.json parsed without `created` and the report's `seconds`
    (what differs between two builds of one store; tests/test_compile_arrays.py compares with it too)."""
    files = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            files[name] = f.read()
    meta = json.loads(files.pop("meta.json"))
    del meta["created"], meta["report"]["seconds"]
    files["meta.json"] = meta
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="Moses rule table (its .features.json beside it)")
    parser.add_argument("--strategy", default="icr", help="binarization strategy (default icr)")
    parser.add_argument("--reference", action="store_true", help="also this tree's reference path (objects)")
    parser.add_argument("--baseline-tree", default=None, help="also the default path of this other checkout")
    parser.add_argument("--repeat", type=int, default=1, help="runs per variant; the least CPU time is kept")
    parser.add_argument("--work-dir", default=None, help="where the stores go (default: a temp dir)")
    parser.add_argument("--output", default=RESULTS, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args(argv)
    table = os.path.abspath(args.table)
    variants = [("arrays", REPOSITORY, False)]
    if args.reference:
        variants.append(("reference", REPOSITORY, True))
    if args.baseline_tree:
        variants.append(("baseline", os.path.abspath(args.baseline_tree), False))

    results = {}
    with tempfile.TemporaryDirectory(prefix="bench_compile_") as temporary:
        work_dir = args.work_dir or temporary
        stores = {}
        for name, tree, reference in variants:
            runs = []
            for _ in range(args.repeat):
                store = os.path.join(work_dir, f"store-{name}")
                load = os.getloadavg()
                report, usage = _run(tree, table, store, args.strategy, reference)
                run = {**report, **usage, "cpu": round(usage["user"] + usage["sys"], 3),
                       "load_average": [round(x, 2) for x in load]}
                runs.append(run)
                print(f"{name}: {run['cpu']:.2f} CPU s (user {run['user']:.2f}, sys {run['sys']:.2f}), "
                      f"peak RSS {run['peak_rss_mb']:.0f} MB, load {load[0]:.1f}", flush=True)
            results[name] = {**min(runs, key=lambda r: r["cpu"]), "tree": tree, "runs": runs}
            stores[name] = store_files(os.path.join(work_dir, f"store-{name}"))
        first = next(iter(stores.values()))
        identical = all(files == first for files in stores.values())
    output = {
        "benchmark": "compile",
        "machine": machine_info(),
        "table": table,
        "strategy": args.strategy,
        "source_rules": results["arrays"]["n_read"],
        "binary_rules": results["arrays"]["binary_rules"],
        "identical_stores": identical,
        "variants": results,
        "cpu_ratio_to_arrays": {name: round(r["cpu"] / results["arrays"]["cpu"], 2) for name, r in results.items()},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as out:
        json.dump(output, out, indent=1)
    print_table(output)
    print(f"\nwritten to {args.output}")
    if not identical:
        print("the variants made different stores", file=sys.stderr)
        return 1
    return 0


def _run(tree: str, table: str, store: str, strategy: str, reference: bool) -> tuple[dict, dict]:
    """One compile in a fresh process started in `tree`: its report, and its own rusage (bench.child_usage:
    user and system CPU seconds, peak RSS)."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        usage = run_measured([sys.executable, "-c", CHILD, table, store, strategy, "1" if reference else "0"],
                             cwd=tree, env={**os.environ, "PYTHONPATH": tree}, stdout=stdout, stderr=stderr)
        stdout.seek(0)
        stderr.seek(0)
        if usage["exit_code"] != 0:
            raise SystemExit(f"compiling in {tree} failed:\n{stderr.read()[-3000:]}")
        report = json.loads(stdout.read().strip().splitlines()[-1])
    return report, {"user": round(usage["user_seconds"], 3), "sys": round(usage["system_seconds"], 3),
                    "peak_rss_mb": round(usage["peak_rss_mb"], 1)}


def print_table(output: dict) -> None:
    print(f"\n{output['source_rules']:,} rules, strategy {output['strategy']}, "
          f"{output['binary_rules']:,} binary rules; stores identical: {output['identical_stores']}\n")
    steps = ["read", "filter", "binarize", "compile", "write"]
    print("| variant | CPU s (user + sys) | peak RSS | " + " | ".join(f"{s} (CPU s)" for s in steps) + " | load |")
    print("|---|---|---|" + "---|" * len(steps) + "---|")
    for name, r in output["variants"].items():
        cpu_steps = r.get("cpu_seconds") or {}
        cells = [f"{cpu_steps[s]:.2f}" if s in cpu_steps else "-" for s in steps]
        print(f"| {name} | {r['cpu']:.2f} ({r['user']:.2f} + {r['sys']:.2f}) | {r['peak_rss_mb']:.0f} MB | "
              + " | ".join(cells) + f" | {r['load_average'][0]:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
