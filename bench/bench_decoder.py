"""Benchmark of the CKY decoder: speed and search effort against the pop limit, per binarization.

    python -m bench.bench_decoder [--system auto|full|small|synthetic] [--sentences N]
                                  [--strategies left icr] [--pop-limits 10 50 100 200 1000]
                                  [--no-profile]

Data (`--system auto` takes the first that exists):
- full:  models/bible-es-en/build/{test.es, lm.bin, rules/rules.gz (+ glue)} (the full Bible build);
- small: models/bible-es-en/build/small/{test.es, lm.bin} and a GHKM table extracted from the small
         build's training data with `cky extract` (cached in models/cache/bench_decoder/);
- synthetic: a generated GHKM-shaped grammar (decoder.synthetic) and sentences drawn from its
         source words, with a 3-gram LM that lmplz trains on its target words.
The rule table is filtered to the test sentences, binarized with each strategy and compiled into
a store (cached). Each strategy is then decoded in its own process (so that peak memory is that
of one decoding process): the store is opened, the LM loaded, and the test sentences decoded at
each pop limit; for every run: sentences per second, seconds per sentence and per 27-token
verse (seconds per token times 27), edges proposed and kept, LM queries (total, novel), and the
total model score. Seconds are the decoding process's CPU time (wall time is kept too: on a
shared machine it mostly measures the other processes). Then py-spy samples one run (icr, pop limit 100) with native frames and the
samples are grouped by where the time goes: rule look-up, cell combination (cube pruning,
recombination), LM scoring, derivations and k-best, Python glue.

Writes bench/results/decoder.json (with the machine and the data used) and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from bench import RESULTS as RESULTS_DIR

import numpy as np

from bench.machine import machine_info

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(RESULTS_DIR, "decoder.json")
CACHE = os.path.join(REPOSITORY, "models", "cache", "bench_decoder")
BIBLE = os.path.join(REPOSITORY, "models", "bible-es-en", "build")
VERSE_TOKENS = 27


# ---------------------------------------------------------------------------------------- data

def _first_existing(*paths):
    return next((p for p in paths if p and os.path.exists(p)), None)


def full_system():
    rules = _first_existing(os.path.join(BIBLE, "rules", "rules.gz"), os.path.join(BIBLE, "rules", "rule-table.gz"),
                            os.path.join(BIBLE, "rules.gz"))
    test, lm = os.path.join(BIBLE, "test.es"), os.path.join(BIBLE, "lm.bin")
    if rules and os.path.exists(test) and os.path.exists(lm):
        glue = _first_existing(os.path.join(os.path.dirname(rules), "glue.txt"),
                               os.path.join(os.path.dirname(rules), "glue-grammar"))
        return {"name": "bible-full", "rules": rules, "test": test, "lm": lm, "glue": glue}
    return None


def small_system(log):
    small = os.path.join(BIBLE, "small")
    needed = [os.path.join(small, name) for name in ("train.es", "train.trees", "train.align", "test.es", "lm.bin")]
    if not all(os.path.exists(p) for p in needed):
        return None
    work = os.path.join(CACHE, "small")
    rules = os.path.join(work, "rules.gz")
    glue = os.path.join(work, "glue.txt")  # written too; the benchmark decodes with the built-in glue
    if not os.path.exists(rules):
        os.makedirs(work, exist_ok=True)
        log("extracting GHKM rules from the small Bible build (cky extract) ...")
        subprocess.run([sys.executable, "-m", "decoder.cli", "extract", "--source", needed[0], "--trees", needed[1],
                        "--alignment", needed[2], "--out", rules + ".tmp.gz", "--glue", glue, "--no-progress"],
                       check=True, cwd=REPOSITORY)
        os.replace(rules + ".tmp.gz", rules)
        for suffix in (".features.json",):
            if os.path.exists(rules + ".tmp.gz" + suffix):
                os.replace(rules + ".tmp.gz" + suffix, rules + suffix)
    return {"name": "bible-small", "rules": rules, "test": needed[3], "lm": needed[4], "glue": None}


def synthetic_system(log, n_rules=200_000, n_sentences=100):
    from decoder.grammar import read_rules, write_rules
    from decoder.synthetic import random_grammar

    work = os.path.join(CACHE, "synthetic")
    rules_path, test, lm = (os.path.join(work, n) for n in ("rules.gz", "test.txt", "lm.arpa"))
    if not os.path.exists(lm):
        os.makedirs(work, exist_ok=True)
        log(f"generating a synthetic grammar of {n_rules:,} rules ...")
        rules = random_grammar(n_rules, seed=1, source_vocab=3000, target_vocab=3000)
        write_rules(rules, rules_path)
        rng = np.random.default_rng(2)
        lexical = [r for r in rules if r.arity == 0]
        sentences, targets = [], []
        for _ in range(n_sentences):
            picks = [lexical[i] for i in rng.integers(0, len(lexical), size=14)]
            sentences.append(" ".join(w for r in picks for w in r.source))
        for _ in range(20000):
            picks = [lexical[i] for i in rng.integers(0, len(lexical), size=12)]
            targets.append(" ".join(w for r in picks for w in r.target))
        with open(test, "w") as f:
            f.write("\n".join(sentences) + "\n")
        lmplz = os.path.join(REPOSITORY, "models", "kenlm", "build", "bin", "lmplz")
        subprocess.run([lmplz, "-o", "3", "--discount_fallback", "--arpa", lm], input="\n".join(targets).encode(),
                       check=True, stderr=subprocess.DEVNULL)
    # random_grammar's scores have no names: call them by position (f0, f1, ...)
    n_scores = len(next(read_rules(rules_path)).scores)
    return {"name": "synthetic", "rules": rules_path, "test": test, "lm": lm, "glue": None,
            "feature_names": [f"f{i}" for i in range(n_scores)]}


def build_store(system: dict, strategy: str, sentences: list, log) -> tuple[str, dict]:
    """The store of the rules filtered to the test sentences, for a strategy (cached)."""
    from decoder.store import build_store as build

    key = f"{system['name']}-{len(sentences)}-{strategy}"
    path = os.path.join(CACHE, "stores", key)
    info_path = path + ".json"
    if os.path.exists(info_path):
        with open(info_path) as f:
            return path, json.load(f)
    started = time.perf_counter()
    log(f"{strategy}: binarizing the rules of {system['rules']} filtered to the test set ...")
    built = build(system["rules"], path, strategy, sentences=[s.split() for s in sentences],
                  feature_names=system.get("feature_names"))
    info = {"rules": built.n_read, "filtered_rules": built.n_kept, "binary_rules": built.meta["n_rules"],
            "virtual_nonterminals": built.report.get("virtual_nonterminals"), "cost": built.report.get("cost"),
            "compile_seconds": round(time.perf_counter() - started, 2)}
    with open(info_path, "w") as f:
        json.dump(info, f)
    return path, info


# ---------------------------------------------------------------------------------------- worker

def worker(args) -> None:
    """Decode the sentences at each pop limit in this process; print one JSON object."""
    started = time.perf_counter()
    from decoder.decoder import Decoder
    from decoder.lm import LanguageModel
    from decoder.settings import DEFAULT_GLUE
    from decoder.store import GrammarStore

    imported = time.perf_counter()
    store = GrammarStore.open(args.store)
    opened = time.perf_counter()
    lm = LanguageModel(args.lm)
    lm_loaded = time.perf_counter()
    decoder = Decoder(store, lm, glue=args.glue or DEFAULT_GLUE)
    ready = time.perf_counter()
    with open(args.test, encoding="utf-8") as f:
        sentences = [line.split() for line in f][: args.sentences]
    runs = []
    for pop_limit in args.pop_limits:
        decoder.reconfigure(pop_limit=pop_limit)
        totals = dict(edges_proposed=0, edges_kept=0, lm_queries=0, lm_queries_novel=0, score=0.0)
        run_started = time.perf_counter()
        cpu_started = time.process_time()
        for words in sentences:
            t = decoder.translate(words)
            for key in ("edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel"):
                totals[key] += t.stats.get(key, 0)
            totals["score"] += t.score
        wall = time.perf_counter() - run_started
        seconds = time.process_time() - cpu_started  # CPU time: the machine is shared, wall time is noisy
        n = len(sentences)
        tokens = sum(len(w) for w in sentences)
        runs.append({
            "pop_limit": pop_limit, "sentences": n, "tokens": tokens, "seconds": round(seconds, 3),
            "wall_seconds": round(wall, 3),
            "sentences_per_second": round(n / seconds, 3),
            "seconds_per_sentence": round(seconds / n, 4),
            "seconds_per_27_token_verse": round(seconds / tokens * VERSE_TOKENS, 4),
            "edges_proposed_per_sentence": round(totals["edges_proposed"] / n, 1),
            "edges_kept_per_sentence": round(totals["edges_kept"] / n, 1),
            "lm_queries_per_sentence": round(totals["lm_queries"] / n, 1),
            "lm_queries_novel_per_sentence": round(totals["lm_queries_novel"] / n, 1),
            "model_score": round(totals["score"], 3),
        })
        if args.progress:  # survives the worker being killed; the parent resumes from it
            with open(args.progress, "a") as f:
                f.write(json.dumps(runs[-1]) + "\n")
    kbest = None
    if args.kbest_sentences > 0:  # k-best extraction cost on top of the search, at pop limit 100
        decoder.reconfigure(pop_limit=100)
        sample = sentences[: args.kbest_sentences]
        timings = {}
        for label, call in (("translate", lambda w: decoder.translate(w)),
                            ("kbest_100_unique", lambda w: decoder.kbest(w, 100, unique=True))):
            t0 = time.process_time()
            for words in sample:
                call(words)
            timings[label] = (time.process_time() - t0) / len(sample)
        kbest = {"sentences": len(sample), "pop_limit": 100,
                 "translate_seconds_per_sentence": round(timings["translate"], 4),
                 "kbest_100_seconds_per_sentence": round(timings["kbest_100_unique"], 4),
                 "kbest_extra_share": round(1 - timings["translate"] / timings["kbest_100_unique"], 3)}
    print(json.dumps({
        "import_seconds": round(imported - started, 3), "store_open_seconds": round(opened - imported, 4),
        "lm_load_seconds": round(lm_loaded - opened, 3), "decoder_init_seconds": round(ready - lm_loaded, 3),
        "binary_rules": len(store), "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "runs": runs, "kbest": kbest,
    }))


def run_worker(store: str, system: dict, sentences: int, pop_limits, profile_to: str | None = None,
               kbest_sentences: int = 0, attempts: int = 3) -> dict:
    """Run the worker; if it dies (the machine is shared), start it again for the pop limits not done."""
    progress = os.path.join(CACHE, "progress", f"{os.path.basename(store)}-{sentences}.jsonl")
    os.makedirs(os.path.dirname(progress), exist_ok=True)
    last_error = ""
    for _ in range(attempts):
        done = {run["pop_limit"]: run for run in _read_runs(progress)} if not profile_to else {}
        todo = [p for p in pop_limits if p not in done]
        command = [sys.executable, "-m", "bench.bench_decoder", "--worker", "--store", store, "--lm", system["lm"],
                   "--test", system["test"], "--sentences", str(sentences),
                   "--kbest-sentences", str(kbest_sentences if todo or profile_to else 0),
                   "--pop-limits", *map(str, todo or [pop_limits[0]])]
        if not profile_to:
            command += ["--progress", progress]
        if system.get("glue"):
            command += ["--glue", system["glue"]]
        if profile_to:
            command = ["py-spy", "record", "--native", "--rate", "200", "--format", "raw", "--output", profile_to,
                       "--"] + command
        finished = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True)
        if finished.returncode == 0:
            result = json.loads([line for line in finished.stdout.splitlines() if line.startswith("{")][-1])
            if not profile_to:
                done.update({run["pop_limit"]: run for run in result["runs"]})
                result["runs"] = [done[p] for p in pop_limits]
                os.unlink(progress)
            return result
        last_error = f"exit status {finished.returncode}: {finished.stderr[-2000:]}"
        print(f"worker died ({last_error[:200]}); restarting", file=sys.stderr, flush=True)
    raise RuntimeError(f"worker failed {attempts} times: {last_error}")


def _read_runs(path: str) -> list:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# ---------------------------------------------------------------------------------------- profile

CATEGORIES = [  # first match wins, searched from the innermost frame outwards
    ("LM scoring (KenLM, and its per-sentence cache)", ("lm::", "score_target", "CkyScoreTarget", "ChartSearch__score",
                                                         "RuleScore", "chart_state_hash", "MurmurHash",
                                                         "score_sentence_boundaries")),
    ("rule look-up", ("_add_binary_groups", "_add_single_group", "_find_symbol_group", "_find_pair_key",
                      "_add_unary_groups", "match_run", "source_word_ids", "sentence_view")),
    ("cell combination (cube pruning, recombination, beams)", ("_evaluate", "_search", "_heap_", "_push_corner",
                                                               "_add_hypothesis", "_item_hash", "_same_states",
                                                               "_prune_and_sort", "_finish_cell", "_build_goal",
                                                               "_build_cell", "_add_oov_items", "_add_edge")),
    ("derivation, tree and k-best (Python)", ("chart.py", "_hypothesis", "_fill_fragment", "kbest", "export",
                                              "roots")),
]


def summarize_profile(raw_path: str) -> dict:
    """Share of samples per category from py-spy's raw (collapsed stack) output, decoding only."""
    counts: dict = {}
    total = 0
    functions: dict = {}
    with open(raw_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not count.isdigit():
                continue
            if "translate" not in stack:  # only time spent decoding
                continue
            count = int(count)
            frames = stack.split(";")
            total += count
            category = "Python glue and other"
            for frame in reversed(frames):
                hit = next((name for name, keys in CATEGORIES if any(k in frame for k in keys)), None)
                if hit:
                    category = hit
                    break
            counts[category] = counts.get(category, 0) + count
            leaf = frames[-1].split(" (")[0]
            functions[leaf] = functions.get(leaf, 0) + count
    top = sorted(functions.items(), key=lambda kv: -kv[1])[:15]
    return {"samples": total,
            "share": {k: round(v / total, 3) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])} if total else {},
            "top_functions": [{"function": k, "share": round(v / total, 3)} for k, v in top] if total else []}


# ---------------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", default="auto", choices=("auto", "full", "small", "synthetic"))
    parser.add_argument("--sentences", type=int, default=600, help="test sentences to decode (default: all 600)")
    parser.add_argument("--strategies", nargs="+", default=["left", "icr"])
    parser.add_argument("--pop-limits", nargs="+", type=int, default=[10, 50, 100, 200, 1000])
    parser.add_argument("--profile-sentences", type=int, default=100)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--profile-only", action="store_true",
                        help="only (re)do the profile, into the existing results file")
    parser.add_argument("--output", default=RESULTS)
    # worker mode (internal)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--lm", help=argparse.SUPPRESS)
    parser.add_argument("--test", help=argparse.SUPPRESS)
    parser.add_argument("--glue", help=argparse.SUPPRESS)
    parser.add_argument("--kbest-sentences", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    def log(message):
        print(message, file=sys.stderr, flush=True)

    system = None
    if args.system in ("auto", "full"):
        system = full_system()
    if system is None and args.system in ("auto", "small"):
        system = small_system(log)
    if system is None:
        system = synthetic_system(log)
    with open(system["test"], encoding="utf-8") as f:
        sentences = [line.strip() for line in f][: args.sentences]
    log(f"data: {system['name']} ({len(sentences)} sentences, "
        f"{np.mean([len(s.split()) for s in sentences]):.1f} tokens on average)")

    results = {"machine": machine_info(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
               "command": "python -m bench.bench_decoder " + " ".join(argv if argv is not None else sys.argv[1:]),
               "system": {k: (os.path.relpath(v, REPOSITORY) if isinstance(v, str) and os.path.isabs(v) else v)
                          for k, v in system.items()},
               "sentences": len(sentences), "mean_tokens": round(float(np.mean([len(s.split()) for s in sentences])), 2),
               "decoder_settings": "defaults of decoder.decoder.Decoder (weights: documented defaults), pop limit varied",
               "strategies": {}}
    if args.profile_only and os.path.exists(args.output):
        with open(args.output) as f:
            results = json.load(f)
    for strategy in ([] if args.profile_only else args.strategies):
        store, info = build_store(system, strategy, sentences, log)
        log(f"{strategy}: decoding at pop limits {args.pop_limits} ...")
        measured = run_worker(store, system, len(sentences), args.pop_limits, kbest_sentences=20)
        measured["store"] = info
        results["strategies"][strategy] = measured
    if not args.no_profile and shutil.which("py-spy"):
        strategy = "icr" if "icr" in args.strategies else args.strategies[0]
        store, _ = build_store(system, strategy, sentences, log)
        log(f"profiling {strategy} at pop limit 100 with py-spy ...")
        with tempfile.TemporaryDirectory() as tmp:
            raw = os.path.join(tmp, "profile.txt")
            try:
                run_worker(store, system, min(args.profile_sentences, len(sentences)), [100], profile_to=raw)
                results["profile"] = {"strategy": strategy, "pop_limit": 100, **summarize_profile(raw)}
            except (RuntimeError, OSError) as error:
                results["profile"] = {"error": str(error)[-500:]}
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(results, f, indent=1)
    print_table(results)
    return 0


def print_table(results: dict) -> None:
    print(f"\nCKY decoder on {results['system']['name']}: {results['sentences']} sentences, "
          f"{results['mean_tokens']} tokens on average ({results['machine']['cpu']})")
    header = ("strategy", "pop", "sent/s", "s/sent", "s/27tok", "edges", "kept", "LM q", "LM novel", "model score")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for strategy, measured in results["strategies"].items():
        for run in measured["runs"]:
            print(f"| {strategy} | {run['pop_limit']} | {run['sentences_per_second']:.2f} | "
                  f"{run['seconds_per_sentence']:.3f} | {run['seconds_per_27_token_verse']:.3f} | "
                  f"{run['edges_proposed_per_sentence']:.0f} | {run['edges_kept_per_sentence']:.0f} | "
                  f"{run['lm_queries_per_sentence']:.0f} | {run['lm_queries_novel_per_sentence']:.0f} | "
                  f"{run['model_score']:.1f} |")
        print(f"  {strategy}: store open {measured['store_open_seconds']} s, decoder init "
              f"{measured['decoder_init_seconds']} s, LM load {measured['lm_load_seconds']} s, "
              f"peak memory {measured['peak_memory_mb']} MB, {measured['binary_rules']:,} binary rules")
    profile = results.get("profile")
    for strategy, measured in results["strategies"].items():
        if measured.get("kbest"):
            k = measured["kbest"]
            print(f"  {strategy}: 100-best (unique) at pop limit 100: {k['kbest_100_seconds_per_sentence']} s per "
                  f"sentence vs {k['translate_seconds_per_sentence']} s for the 1-best")
    if profile and "share" in profile:
        print(f"\nwhere the time goes ({profile['strategy']}, pop limit 100, {profile['samples']} samples):")
        for name, share in profile["share"].items():
            print(f"  {share:6.1%}  {name}")


if __name__ == "__main__":
    sys.exit(main())
