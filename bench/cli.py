"""`cky bench` (or `python -m bench` from the repository root): reproduce Xiao et al. 2009 and Venugopal et al. 2007 (section 6) on the Bible system.

    cky bench                  # every experiment on the Bible Spanish-English system (must be built)
    cky bench --quick          # a reduced run on the tiny fixture system (minutes; CI runs it)
    cky bench --demo           # the README's demo: build and run the default system end to end
    cky bench --sdig SDIG.toml [--sdig-word-grammar DIR] [--test-sentences N]
                               # SDIG beside GHKM and the word-ET baseline (bench.bench_sdig)
    cky bench --searches [--test-sentences N] [--pop-limits ...]
                               # issue 16's search benchmarks (bench.bench_search; resumes)
    cky bench --two-pass [--test-sentences N]
                               # two-pass search against cube pruning on the demo config (bench.bench_two_pass)
    cky bench --moses BIN [--test-sentences N] [--pop-limits ...]
                               # our cube pruning against Moses' chart decoder BIN on the same model
                               # (bench.bench_moses; writes moses.json and moses.md to --out)

Results go to --out (default bench/results): results.json (numbers, machine,
versions, settings), results.md (the tables) and PNG plots.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

from bench import experiments
from bench.experiments import QUICK, Settings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DEFAULT_OUT = os.path.join(REPO, "bench", "results")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="reduced run on the tiny fixture system (CI)")
    parser.add_argument("--demo", action="store_true", help="run the default system end to end (make demo)")
    parser.add_argument("--out", default=None, help="results directory (default: bench/results, "
                                                    "bench/results/quick with --quick)")
    parser.add_argument("--work", default=None, help="where stores, configs and outputs are built "
                                                     "(default: build/bench-work/{quick,bible})")
    parser.add_argument("--strategies", nargs="+", choices=experiments.STRATEGIES, default=None)
    parser.add_argument("--pop-limits", nargs="+", type=int, default=None)
    parser.add_argument("--dev-sentences", type=int, default=None, help="use the first N dev sentences")
    parser.add_argument("--test-sentences", type=int, default=None, help="use the first N test sentences")
    parser.add_argument("--sweep-sentences", type=int, default=None,
                        help="test sentences of the pop-limit sweep (default: all used test sentences)")
    parser.add_argument("--pop-limit", type=int, default=None,
                        help="pop limit of tuning and of experiments 2, 4 and 6 (default 100; --quick: 10)")
    parser.add_argument("--mert-iterations", type=int, default=None)
    parser.add_argument("--mert-restarts", type=int, default=None)
    parser.add_argument("--non-unique-kbest", action="store_true",
                        help="MERT on k-best derivations instead of distinct translations (faster)")
    parser.add_argument("--kbest", type=int, default=None)
    parser.add_argument("--full-grammar-cost", action="store_true",
                        help="experiment 1 on the whole rule table (default: the table filtered to dev+test)")
    parser.add_argument("--data", default=None, help="Bible data build to use (default: the full build if "
                                                     "complete, else models/bible-es-en/build/small)")
    parser.add_argument("--tune-only", nargs="+", choices=experiments.STRATEGIES, default=None,
                        help="tune only these strategies; the others use the tuned weights of left")
    parser.add_argument("--bootstrap-samples", type=int, default=None)
    parser.add_argument("--no-tune", action="store_true", help="decode with the default weights")
    parser.add_argument("--workers", type=int, default=1, help="decoding processes")
    parser.add_argument("--sdig", metavar="SDIG_CONFIG", default=None,
                        help="benchmark this `system = \"sdig\"` config beside GHKM (bench.bench_sdig; "
                             "writes sdig.json and sdig.md to --out)")
    parser.add_argument("--sdig-word-grammar", default=None, help="with --sdig: the word-ET baseline's grammar")
    parser.add_argument("--searches", action="store_true",
                        help="cube and incremental search over pop limits, time against length, workers, peak "
                             "memory (bench.bench_search on the demo config; resumes; writes search.* to --out)")
    parser.add_argument("--two-pass", action="store_true",
                        help="two-pass search against cube pruning (bench.bench_two_pass) on the demo config "
                             "(--quick: the fixture system); writes two_pass.json, two_pass.png and a section "
                             "of results.md to --out; --test-sentences: verses (default 200)")
    parser.add_argument("--moses", metavar="MOSES_BIN", default=None,
                        help="our cube pruning against this Moses decoder binary on the same model (bench.bench_moses "
                             "on the demo config; --test-sentences: verses (default 100); --pop-limits: ours)")
    parser.add_argument("--two-pass-config", default=None, help="with --two-pass: this decoder config instead "
                                                                "of the demo's")


def settings_from(args) -> Settings:
    settings = Settings(**vars(QUICK)) if args.quick else Settings()
    overrides = {"strategies": tuple(args.strategies) if args.strategies else None,
                 "pop_limits": tuple(args.pop_limits) if args.pop_limits else None,
                 "dev_sentences": args.dev_sentences, "test_sentences": args.test_sentences,
                 "sweep_sentences": args.sweep_sentences, "mert_iterations": args.mert_iterations,
                 "kbest": args.kbest, "bootstrap_samples": args.bootstrap_samples,
                 "default_pop_limit": args.pop_limit, "mert_restarts": args.mert_restarts,
                 "tune_strategies": tuple(args.tune_only) if args.tune_only else None}
    for key, value in overrides.items():
        if value is not None:
            setattr(settings, key, value)
    settings.tune = not args.no_tune
    if args.non_unique_kbest:
        settings.unique_kbest = False
    settings.cost_on_full_grammar = args.full_grammar_cost
    settings.workers = args.workers
    return settings


def main(args) -> int:
    if args.sdig:
        from bench import bench_sdig

        sdig_parser = argparse.ArgumentParser()
        bench_sdig.add_arguments(sdig_parser)
        sdig_args = sdig_parser.parse_args(["--sdig-config", args.sdig, "--paper"])
        sdig_args.word_grammar = args.sdig_word_grammar
        sdig_args.sentences = args.test_sentences or sdig_args.sentences
        sdig_args.out = args.out or DEFAULT_OUT
        return bench_sdig.main(sdig_args)
    if args.searches:
        from bench import bench_search

        out = args.out or DEFAULT_OUT
        return bench_search.main(["--resume", "--out", os.path.join(out, "search.jsonl"), "--results-dir", out]
                                 + (["--sentences", str(args.test_sentences)] if args.test_sentences else [])
                                 + (["--pop-limits", *map(str, args.pop_limits)] if args.pop_limits else []))
    if args.moses:
        from bench import bench_moses

        return bench_moses.main(["--moses-bin", args.moses, "--out", args.out or DEFAULT_OUT]
                                + (["--sentences", str(args.test_sentences)] if args.test_sentences else [])
                                + (["--pop-limits", *map(str, args.pop_limits)] if args.pop_limits else []))
    if args.two_pass:
        from bench import bench_two_pass

        out = args.out or (os.path.join(DEFAULT_OUT, "quick") if args.quick else DEFAULT_OUT)
        work = args.work or os.path.join(REPO, "build", "bench-work", "quick")
        return bench_two_pass.bench_command(out, args.test_sentences, args.quick, work, args.two_pass_config,
                                            "cky bench " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["bench"]
                                                                    else sys.argv[1:]),
                                            log=lambda m: print(m, file=sys.stderr, flush=True))
    if args.demo:
        from bench.experiments_demo import run_demo

        return run_demo(workers=args.workers)
    out = args.out or (os.path.join(DEFAULT_OUT, "quick") if args.quick else DEFAULT_OUT)
    # built stores, configs and outputs: under build/ (ignored by git), one directory per run kind
    work = args.work or os.path.join(REPO, "build", "bench-work", "quick" if args.quick else "bible")
    os.makedirs(work, exist_ok=True)
    if args.quick:
        system = experiments.fixture_system(work)
    else:
        system = experiments.bible_system(work, args.data, log=lambda m: print(m, file=sys.stderr, flush=True))
        if system is None:
            print(f"cky bench: no Bible data build under {experiments.BIBLE_BUILD} (run `cky data bible-es-en "
                  f"[--small]`), or use --quick", file=sys.stderr)
            return 1
    settings = settings_from(args)
    results = experiments.run_all(system, settings, log=lambda message: print(message, file=sys.stderr,
                                                                              flush=True))
    results["command"] = "cky bench " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["bench"] else sys.argv[1:])
    write_results(results, out)
    print(markdown(results))
    print(f"\nresults in {out}", file=sys.stderr)
    return 0


def write_results(results: dict, out: str) -> None:
    from bench.plots import plot_all

    os.makedirs(out, exist_ok=True)
    results["plots"] = [os.path.basename(p) for p in plot_all(results, out)]
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, default=str)
        f.write("\n")
    from bench.bench_two_pass import SECTION_END, SECTION_START

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
             f"{results['machine'].get('git_commit', '?')[:10]}, {results['machine'].get('cpu_model')} "
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

