"""Benchmark of the grammar store: compile a 1M-rule grammar, open it, look things up.

    python -m bench.bench_store [--rules 1000000] [--strategy left] [--seed 0]

Generates a GHKM-shaped table (decoder.synthetic.random_grammar: Zipf-like labels
and words, ~3 nonterminals per rule, terminal runs), writes it as a gzipped Moses
table, then times what `cky compile` does (read, binarize, compile, write), opens
the store in a fresh process (< 1 s is the target; the page cache is warm), and
times per-sentence run matching and pair look-ups. Writes bench/results/store.json.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

from bench import RESULTS as RESULTS_DIR

import numpy as np

from bench.machine import machine_info

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(RESULTS_DIR, "store.json")

OPEN_SCRIPT = """
import time, json, sys
started = time.perf_counter()
from decoder.store import GrammarStore
imported = time.perf_counter()
store = GrammarStore.open(sys.argv[1])
opened = time.perf_counter()
view = store.sentence_view(sys.argv[2].split())
first_sentence = time.perf_counter()
print(json.dumps({"import_seconds": imported - started, "open_seconds": opened - imported,
                  "first_sentence_seconds": first_sentence - opened, "n_rules": len(store)}))
"""


def directory_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))


def generate_rules(n_rules: int, seed: int):
    """The lead's generator when present (decoder.synthetic), else a small stand-in here."""
    try:
        from decoder.synthetic import random_grammar
    except ImportError:  # pragma: no cover - only before decoder/synthetic.py existed
        raise SystemExit("bench_store needs decoder.synthetic.random_grammar")
    # mean 3.3 before clipping at 6 nonterminals gives >= 3 per rule on average
    return random_grammar(n_rules, seed=seed, mean_nonterminals=3.3)


def run(n_rules: int, strategy: str, seed: int, work_dir: str, table: str | None = None) -> dict:
    from decoder.binarize import binarize
    from decoder.grammar import read_rules, write_rules
    from decoder.store import GrammarStore, compile_grammar, save_store

    timings: dict[str, float] = {}
    cpu_timings: dict[str, float] = {}  # the machine may be shared: CPU time says what wall time hides

    def timed(name, function, *args, **kwargs):
        started, cpu_started = time.perf_counter(), time.process_time()
        value = function(*args, **kwargs)
        timings[name] = round(time.perf_counter() - started, 3)
        cpu_timings[name] = round(time.process_time() - cpu_started, 3)
        print(f"  {name}: {timings[name]:.2f} s (CPU {cpu_timings[name]:.2f} s)", flush=True)
        return value

    store_path = os.path.join(work_dir, "store")
    if table is None:
        table_path = os.path.join(work_dir, "rules.txt.gz")
        print(f"generating {n_rules:,} rules", flush=True)
        rules = timed("generate", generate_rules, n_rules, seed)
        timed("write_table", write_rules, rules, table_path)
        del rules
    else:
        table_path = table
    rules = timed("read_table", lambda: list(read_rules(table_path)))
    nonterminals = np.array([r.arity for r in rules])
    grammar = timed("binarize", binarize, rules, strategy=strategy, seed=seed)
    compiled = timed("compile", compile_grammar, grammar, source_table=table_path)
    timed("write_store", save_store, compiled, store_path)
    meta = compiled.meta
    del compiled, grammar

    # Open in a fresh process, as a decoder would (several times: report the best and the worst).
    sentence = " ".join(w for r in rules[:40] for w in r.source if isinstance(w, str))
    opens = []
    for _ in range(3):
        output = subprocess.run([sys.executable, "-c", OPEN_SCRIPT, store_path, sentence],
                                capture_output=True, text=True, cwd=REPOSITORY)
        if output.returncode != 0:
            raise SystemExit(f"opening the store in a fresh process failed:\n{output.stderr}")
        opens.append(json.loads(output.stdout))
    open_seconds = [o["open_seconds"] for o in opens]

    # Per-sentence work in this process: run matching and pair look-ups.
    store = GrammarStore.open(store_path)
    rng = np.random.default_rng(seed)
    words = [w for r in rules[:5000] for w in r.source if isinstance(w, str)]
    sentences = [[words[i] for i in rng.integers(0, len(words), size=30)] for _ in range(200)]
    store.sentence_view(sentences[0])  # loads the source vocabulary
    started = time.perf_counter()
    n_spans = sum(len(store.sentence_view(s).runs) for s in sentences)
    match_ms = (time.perf_counter() - started) / len(sentences) * 1000
    left = rng.integers(0, store.n_symbols, size=20000)
    right = rng.integers(0, store.n_symbols, size=20000)
    used = rng.integers(0, len(store), size=20000)
    pairs = [(int(store.rule_child0[r]), int(store.rule_child1[r])) for r in used if store.rule_child1[r] >= 0]
    started = time.perf_counter()
    found = sum(len(store.rules_for_pair(a, b)) for a, b in pairs) + \
        sum(len(store.rules_for_pair(int(a), int(b))) for a, b in zip(left, right))
    lookup_us = (time.perf_counter() - started) / (len(pairs) + len(left)) * 1e6

    table_bytes = os.path.getsize(table_path)
    with gzip.open(table_path, "rb") as f:
        text_bytes = sum(len(chunk) for chunk in iter(lambda: f.read(1 << 22), b""))
    store_bytes = directory_size(store_path)
    return {
        "benchmark": "store",
        "machine": machine_info(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": os.getloadavg(),
        "table": table,
        "source_rules": len(rules),
        "mean_nonterminals_per_rule": round(float(nonterminals.mean()), 3),
        "strategy": strategy,
        "binary_rules": meta["n_rules"],
        "nonterminals": meta["n_nonterminals"],
        "virtual_nonterminals": meta["n_nonterminals"] - meta["n_real_nonterminals"],
        "runs": meta["n_runs"],
        "seconds": timings,
        "cpu_seconds": cpu_timings,
        "compile_seconds": round(timings["read_table"] + timings["binarize"] + timings["compile"]
                                 + timings["write_store"], 3),
        "open_seconds": {"best": round(min(open_seconds), 4), "worst": round(max(open_seconds), 4),
                         "import": round(opens[0]["import_seconds"], 3),
                         "first_sentence": round(opens[0]["first_sentence_seconds"], 4)},
        "open_under_1s": max(open_seconds) < 1.0,
        "table_gz_bytes": table_bytes,
        "table_text_bytes": text_bytes,
        "store_bytes": store_bytes,
        "store_over_table_gz": round(store_bytes / table_bytes, 2),
        "store_over_table_text": round(store_bytes / text_bytes, 2),
        "match_runs_ms_per_30_word_sentence": round(match_ms, 3),
        "matched_spans_per_sentence": round(n_spans / len(sentences), 1),
        "rules_for_pair_us": round(lookup_us, 2),
        "pair_lookup_rules_found": int(found),
    }


def print_table(result: dict) -> None:
    seconds, cpu = result["seconds"], result["cpu_seconds"]
    rows = [
        ("source rules", f"{result['source_rules']:,}"),
        ("nonterminals per rule (mean)", f"{result['mean_nonterminals_per_rule']}"),
        (f"binary rules ({result['strategy']})", f"{result['binary_rules']:,}"),
        ("virtual symbols / runs", f"{result['virtual_nonterminals']:,} / {result['runs']:,}"),
        ("read gzipped table", f"{seconds['read_table']:.1f} s (CPU {cpu['read_table']:.1f} s)"),
        ("binarize", f"{seconds['binarize']:.1f} s (CPU {cpu['binarize']:.1f} s)"),
        ("compile arrays", f"{seconds['compile']:.1f} s (CPU {cpu['compile']:.1f} s)"),
        ("write store", f"{seconds['write_store']:.1f} s (CPU {cpu['write_store']:.1f} s)"),
        ("cky compile total", f"{result['compile_seconds']:.1f} s"),
        ("load average (1, 5, 15 min)", " ".join(f"{x:.1f}" for x in result["load_average"])),
        ("open store (fresh process)", f"{result['open_seconds']['best'] * 1000:.1f}"
                                       f"-{result['open_seconds']['worst'] * 1000:.1f} ms"),
        ("table (text / gzip)", f"{result['table_text_bytes'] / 2**20:.1f} / {result['table_gz_bytes'] / 2**20:.1f} MiB"),
        ("store", f"{result['store_bytes'] / 2**20:.1f} MiB ({result['store_over_table_gz']}x the gzipped, "
                   f"{result['store_over_table_text']}x the plain table)"),
        ("match runs, 30-word sentence", f"{result['match_runs_ms_per_30_word_sentence']:.2f} ms"),
        ("rules_for_pair (Python call)", f"{result['rules_for_pair_us']:.1f} us"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1_000_000, help="source rules to generate (default 1,000,000)")
    parser.add_argument("--strategy", default="left", help="binarization strategy (default left)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table", default=None, help="compile this Moses table instead of generating one")
    parser.add_argument("--work-dir", default=None, help="where to put the table and store (default: a temp dir)")
    parser.add_argument("--output", default=RESULTS, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_store_") as temporary:
        work_dir = args.work_dir or temporary
        os.makedirs(work_dir, exist_ok=True)
        result = run(args.rules, args.strategy, args.seed, work_dir, args.table)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as out:
        json.dump(result, out, indent=1)
    print()
    print_table(result)
    print(f"\nwritten to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
