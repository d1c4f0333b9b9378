"""`cky bench`: reproduce Xiao et al. 2009 and Venugopal et al. 2007 (section 6), and time the decoder.

    cky bench [--pair es-en|zh-en|both | --data DIR]
                               # every experiment on a Bible system (must be built: `cky data bible-PAIR`,
                               # the full build if it has its rules, else the small one; both: one report)
    cky bench --quick          # a reduced run on the tiny generated fixture system (minutes; CI runs it)
    cky bench --speed [--config CONFIG] [--input FILE]
                               # words and sentences per second of one decoding process
                               # (default: the fixture system)
    cky bench --demo           # `cky demo` (here on --workers processes, default 1)
    cky bench --binarization [--pair es-en|zh-en|both] [--rules PATH]
                               # the grammar tables of Zhang et al. 2006 and Xiao et al. 2009 (Q(G'),
                               # binary rules, reordering) for a pair's rule table, pairs side by side
                               # (results in build/bench/binarization)
    cky bench --binarization --extraction-settings [--pair ...]
                               # Q(left) and Q(icr) of the pair's rules extracted again under other
                               # settings (rule size limits, Moses extract-ghkm's defaults)
    cky bench --train [--small] [--pair es-en|zh-en] [--reuse [DIR]] [--moses DIR]
                               # the Bible recipe from plain text to a tuned system, wall and CPU seconds
                               # per stage, rules, store size, test BLEU/chrF (train.json, train.md);
                               # beside it Moses' train-model.perl --ghkm on the same corpus where a
                               # Moses build is at hand (--moses DIR or $MOSES_ROOT)

Results go to --out (default build/bench, build/bench/quick with --quick):
results.json (numbers, machine, versions, settings), results.md (the tables)
and PNG plots (with the `plot` extra).

From a clone of the repository, `python -m bench` also runs the long research
benchmarks of bench/ (they are not installed with the package):

    python -m bench --searches [--test-sentences N] [--pop-limits ...]   # cube and incremental search
    python -m bench --two-pass [--test-sentences N]                      # two-pass against cube pruning
    python -m bench --moses BIN [--pair PAIR] [--test-sentences N] [--pop-limits ...]
                                                                         # against Moses' chart and S2T decoders
    python -m bench --sdig SDIG.toml [--sdig-word-grammar DIR]           # SDIG beside GHKM
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys

from ..errors import UsageError

DEFAULT_OUT = os.path.join("build", "bench")  # relative to the working directory; build/ is ignored by git
DEFAULT_WORK = os.path.join("build", "bench-work")
DEFAULT_BINARIZATION_OUT = os.path.join(DEFAULT_OUT, "binarization")

# The modes that need the repository's bench/ package: flag -> its module there.
CLONE_MODES = {"sdig": "bench_sdig", "searches": "bench_search", "two_pass": "bench_two_pass",
               "moses": "bench_moses"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..benchmark.binarization import PAIRS
    from ..benchmark.experiments import STRATEGIES, WEIGHT_SOURCES

    parser.add_argument("--quick", action="store_true", help="reduced run on the tiny fixture system (CI)")
    parser.add_argument("--demo", action="store_true", help="`cky demo` on --workers processes (default 1)")
    parser.add_argument("--speed", action="store_true",
                        help="words and sentences per second of one decoding process (--config, --input)")
    parser.add_argument("--out", default=None, help=f"results directory (default: {DEFAULT_OUT}, "
                                                    f"{os.path.join(DEFAULT_OUT, 'quick')} with --quick)")
    parser.add_argument("--work", default=None, help="where stores, configs and outputs are built "
                                                     f"(default: {DEFAULT_WORK}/{{quick,bible}})")
    parser.add_argument("--workers", type=int, default=None,
                        help="decoding processes (default 1); with --train, the recipe's processes "
                             "(default: all cores)")
    speed = parser.add_argument_group("--speed")
    speed.add_argument("--startup", action="store_true",
                       help="also start the decoder in fresh processes: seconds to the open decoder and to the first "
                            "sentence (the --input lines as raw text), and peak RSS")
    speed.add_argument("--config", default=None,
                       help="decoder config to time (default: the fixture system's, built under --work)")
    speed.add_argument("--input", default=None,
                       help="sentences to translate, one per line (default: the config's system's test set "
                            "when it is the fixture's; else required)")
    speed.add_argument("--repeats", type=int, default=3, help="times each sentence is translated (default 3)")
    speed.add_argument("--warmup", type=int, default=3, help="untimed sentences first (default 3)")
    tables = parser.add_argument_group("--binarization")
    tables.add_argument("--binarization", action="store_true",
                        help="the binarization papers' grammar tables (statistics, Q(G') and binary rules per "
                             f"strategy and per ICR sweep) of a rule table (--out default: {DEFAULT_BINARIZATION_OUT})")
    tables.add_argument("--pair", choices=PAIRS + ("both",), default=None,
                        help="the language pair whose Bible recipe's build to use (default: es-en; both: side by "
                             "side, a pair not built is listed as skipped): with --binarization, its rule table; "
                             "for the experiments, its full build if it has rules, LM, dev and test sets, else its "
                             "small one (instead of --data); with --train, the recipe to time; with --moses, the "
                             "build both decoders run")
    tables.add_argument("--rules", default=None, metavar="PATH",
                        help="measure this rule table instead (named by --pair if one pair is given)")
    tables.add_argument("--seeds", type=int, default=None, help="seeds of the random strategy (default 5)")
    tables.add_argument("--icr-max-iterations", type=int, default=None, help="ICR sweeps at most (default 20)")
    tables.add_argument("--decode", action="store_true",
                        help="also BLEU, edges and model score per strategy against --pop-limits (default 10 50 "
                             "100 200 1000) with common weights on the first --test-sentences (default 10) test "
                             "sentences of the pair's build (stores and configs under --work)")
    tables.add_argument("--extraction-settings", action="store_true",
                        help="instead: Q(left) and Q(icr) of the pair's rules extracted again under other settings "
                             "(minimal rules, compose 2, rules seen twice, Moses extract-ghkm's limits), whole and "
                             "filtered to the test set, from the corpus of the table's recipe build (extractions "
                             "under --work)")
    training = parser.add_argument_group("--train")
    training.add_argument("--train", action="store_true",
                          help="time the Bible recipe (--pair, default es-en) from plain text to a tuned system, "
                               f"stage by stage, in a fresh directory under --out (default {DEFAULT_OUT}); "
                               "writes train.json and train.md")
    training.add_argument("--small", action="store_true",
                          help="with --train: the recipe's small system; with --pair: its small build")
    training.add_argument("--reuse", nargs="?", const="", default=None, metavar="DIR",
                          help="with --train: report this finished build's stages.json instead of building (no DIR: "
                               "the recipe's build, `cky data`'s default directory)")
    experiments = parser.add_argument_group("experiments")
    experiments.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=None)
    experiments.add_argument("--pop-limits", nargs="+", type=int, default=None)
    experiments.add_argument("--dev-sentences", type=int, default=None, help="use the first N dev sentences")
    experiments.add_argument("--test-sentences", type=int, default=None, help="use the first N test sentences")
    experiments.add_argument("--sweep-sentences", type=int, default=None,
                             help="test sentences of the pop-limit sweep (default: all used test sentences)")
    experiments.add_argument("--pop-limit", type=int, default=None,
                             help="pop limit of tuning and of experiments 2, 4 and 6 (default 100; --quick: 10)")
    experiments.add_argument("--mert-iterations", type=int, default=None)
    experiments.add_argument("--mert-restarts", type=int, default=None)
    experiments.add_argument("--non-unique-kbest", action="store_true",
                             help="MERT on k-best derivations instead of distinct translations (faster)")
    experiments.add_argument("--kbest", type=int, default=None)
    experiments.add_argument("--full-grammar-cost", action="store_true",
                             help="experiment 1 on the whole rule table (default: the table filtered to dev+test)")
    experiments.add_argument("--data", default=None, help="Bible data build to use (default: the full build if "
                                                          "complete, else its small build)")
    experiments.add_argument("--tune-only", nargs="+", choices=STRATEGIES, default=None,
                             help="tune only these strategies; the others use the tuned weights of left")
    experiments.add_argument("--bootstrap-samples", type=int, default=None)
    experiments.add_argument("--common-weights", choices=WEIGHT_SOURCES["common_weights"], default=None,
                             help="weights of the pop-limit sweep, the same for every strategy: left (default: "
                                  "left's after MERT, as Xiao et al.) or build (the build's config.toml)")
    experiments.add_argument("--mert-start", choices=WEIGHT_SOURCES["mert_start"], default=None,
                             help="where MERT starts: defaults (the decoder's, default) or build (the build's "
                                  "config.toml)")
    experiments.add_argument("--no-tune", action="store_true", help="decode with the default weights")
    clone = parser.add_argument_group("research benchmarks (from a clone: python -m bench ...)")
    clone.add_argument("--sdig", metavar="SDIG_CONFIG", default=None,
                       help="benchmark this `system = \"sdig\"` config beside GHKM (writes sdig.json and sdig.md)")
    clone.add_argument("--sdig-word-grammar", default=None, help="with --sdig: the word-ET baseline's grammar")
    clone.add_argument("--searches", action="store_true",
                       help="cube and incremental search over pop limits, time against length, workers, peak "
                            "memory (on the demo config; resumes; writes search.*)")
    clone.add_argument("--two-pass", action="store_true",
                       help="two-pass search against cube pruning on the demo config (--quick: the fixture "
                            "system); writes two_pass.json, two_pass.png and a section of results.md; "
                            "--test-sentences: verses (default 200)")
    clone.add_argument("--moses", metavar="MOSES_BIN|DIR", default=None,
                       help="our cube pruning against this Moses decoder binary, its chart and string-to-tree "
                            "decoders, on the same model (--pair: the build, es-en, zh-en or both; --test-sentences: "
                            "verses (default 100); --pop-limits: ours); with --train: the "
                            "root of a Moses build (default $MOSES_ROOT) whose train-model.perl --ghkm runs on "
                            "the same corpus (--test-sentences: the test sentences Moses decodes, default all)")
    clone.add_argument("--two-pass-config", default=None, help="with --two-pass: this decoder config instead "
                                                               "of the demo's")


def settings_from(args):
    """The experiments' Settings: the defaults (or QUICK's), with what the command line gives."""
    from ..benchmark.experiments import QUICK, Settings

    overrides = {"strategies": tuple(args.strategies) if args.strategies else None,
                 "pop_limits": tuple(args.pop_limits) if args.pop_limits else None,
                 "dev_sentences": args.dev_sentences, "test_sentences": args.test_sentences,
                 "sweep_sentences": args.sweep_sentences, "mert_iterations": args.mert_iterations,
                 "kbest": args.kbest, "bootstrap_samples": args.bootstrap_samples,
                 "default_pop_limit": args.pop_limit, "mert_restarts": args.mert_restarts,
                 "tune_strategies": tuple(args.tune_only) if args.tune_only else None,
                 "common_weights": args.common_weights, "mert_start": args.mert_start}
    overrides = {key: value for key, value in overrides.items() if value is not None}
    overrides.update(tune=not args.no_tune, cost_on_full_grammar=args.full_grammar_cost, workers=decoding_workers(args))
    if args.non_unique_kbest:
        overrides["unique_kbest"] = False
    return dataclasses.replace(QUICK if args.quick else Settings(), **overrides)


def decoding_workers(args) -> int:
    """--workers of the decoding modes: 1 unless given (--train's default, all cores, is its own)."""
    return 1 if args.workers is None else args.workers


def clone_module(flag: str):
    """bench.<module> of the repository for a research mode, or a UsageError saying to run it from a clone."""
    module = CLONE_MODES[flag]
    try:
        return importlib.import_module(f"bench.{module}")
    except ModuleNotFoundError as error:
        if error.name not in ("bench", f"bench.{module}"):
            raise
        raise UsageError(f"--{flag.replace('_', '-')} runs the research benchmarks of the repository's bench/, "
                         "which are not installed: run `python -m bench` from the root of a clone") from None


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def command_line() -> str:
    return "cky bench " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["bench"] else sys.argv[1:])


def main(args: argparse.Namespace) -> int:
    if args.train:
        return train(args)
    if args.reuse is not None:
        raise UsageError("--reuse goes with --train")
    if args.small and not args.pair:
        raise UsageError("--small goes with --train, or with --pair (the recipe's small build)")
    if args.sdig:
        bench_sdig = clone_module("sdig")
        sdig_parser = argparse.ArgumentParser()
        bench_sdig.add_arguments(sdig_parser)
        sdig_args = sdig_parser.parse_args(["--sdig-config", args.sdig, "--paper"])
        sdig_args.word_grammar = args.sdig_word_grammar
        sdig_args.sentences = args.test_sentences or sdig_args.sentences
        sdig_args.out = args.out or DEFAULT_OUT
        return bench_sdig.main(sdig_args)
    if args.searches:
        bench_search = clone_module("searches")
        out = args.out or DEFAULT_OUT
        return bench_search.main(["--resume", "--out", os.path.join(out, "search.jsonl"), "--results-dir", out]
                                 + (["--sentences", str(args.test_sentences)] if args.test_sentences else [])
                                 + (["--pop-limits", *map(str, args.pop_limits)] if args.pop_limits else []))
    if args.moses:
        bench_moses = clone_module("moses")
        return bench_moses.main(["--moses-bin", args.moses, "--out", args.out or DEFAULT_OUT]
                                + (["--pair", args.pair] if args.pair else [])
                                + (["--sentences", str(args.test_sentences)] if args.test_sentences else [])
                                + (["--pop-limits", *map(str, args.pop_limits)] if args.pop_limits else []))
    if args.two_pass:
        bench_two_pass = clone_module("two_pass")
        out = args.out or (os.path.join(DEFAULT_OUT, "quick") if args.quick else DEFAULT_OUT)
        work = args.work or os.path.join(DEFAULT_WORK, "quick")
        return bench_two_pass.bench_command(out, args.test_sentences, args.quick, work, args.two_pass_config,
                                            command_line(), log=log)
    if args.binarization:
        return binarization(args)
    if args.rules or args.decode or args.extraction_settings or args.seeds is not None \
            or args.icr_max_iterations is not None:
        raise UsageError("--rules, --decode, --extraction-settings, --seeds and --icr-max-iterations go "
                         "with --binarization")
    if args.pair and (args.quick or args.demo or args.speed):
        raise UsageError("--pair names a Bible build: it does not go with --quick, --demo or --speed")
    if args.pair and args.data:
        raise UsageError("--data names one build and --pair a recipe's: give one of them")
    if args.demo:
        from ..demo import run_demo

        return run_demo(workers=decoding_workers(args))
    if args.speed:
        return speed(args)
    return experiments(args)


def experiments(args: argparse.Namespace) -> int:
    from ..benchmark import experiments
    from ..benchmark.report import combined_markdown, markdown, write_combined, write_results
    from ..experiment import fixture_system

    out = args.out or (os.path.join(DEFAULT_OUT, "quick") if args.quick else DEFAULT_OUT)
    work = args.work or os.path.join(DEFAULT_WORK, "quick" if args.quick else "bible")
    os.makedirs(work, exist_ok=True)
    settings = settings_from(args)
    if args.quick:
        systems, skipped = {"fixture": fixture_system(work)}, {}
    else:
        systems, skipped = pair_systems(args, work)
        if not systems:
            for reason in skipped.values():
                log(f"cky bench: {reason}, or use --quick")
            return 1
    if len(systems) == 1 and not skipped:
        results = experiments.run_all(next(iter(systems.values())), settings, log=log)
        results["command"] = command_line()
        write_results(results, out, log=log)
        print(markdown(results))
    else:
        by_pair = {}
        for pair, system in systems.items():
            log(f"== {pair}: {system.build}")
            by_pair[pair] = experiments.run_all(system, settings, log=log)
        combined = {"command": command_line(), "pairs": by_pair, "skipped": skipped}
        write_combined(combined, out, log=log)
        print(combined_markdown(combined))
    log(f"\nresults in {out}")
    return 0


def pair_systems(args: argparse.Namespace, work: str) -> tuple[dict, dict]:
    """The Bible systems the experiments run on, by name (--data: that build; --pair PAIR: the recipe's
    build, full before small, or with --small its small build; both: each pair's), and the pairs without
    a build, with the reason."""
    from ..benchmark.binarization import PAIRS
    from ..experiment import bible_build, bible_data_dir, bible_system, is_usable_build, missing_trained_files

    if args.data:
        if not os.path.isdir(args.data):
            raise UsageError(f"--data {args.data}: no such directory")
        system = bible_system(work, args.data, log=log)
        if system is None:
            raise UsageError(f"--data {args.data}: not a build the benchmark can read: it lacks "
                             + ", ".join(missing_trained_files(args.data)))
        return {system.name: system}, {}
    systems, skipped = {}, {}
    for pair in (PAIRS if args.pair == "both" else (args.pair or "es-en",)):
        build = bible_build(pair)
        if args.small:
            build = os.path.join(build, "small")
            data = build if is_usable_build(build) else None
        else:
            data = bible_data_dir(build)
        system = bible_system(work, data, log=log) if data else None
        if system is None:
            looked = [build] if args.small else [build, os.path.join(build, "small")]
            skipped[pair] = (f"no Bible {pair} build the benchmark can read: "
                             + "; ".join(f"{d} lacks " + ", ".join(missing_trained_files(d)) for d in looked)
                             + f" (run `cky data bible-{pair}" + (" --small" if args.small else " [--small]") + "`)")
        else:
            systems[pair] = system
    return systems, skipped


def binarization(args: argparse.Namespace) -> int:
    from ..benchmark import binarization as tables

    settings = tables.Settings()
    if args.strategies:
        settings.strategies = tuple(args.strategies)
    if args.seeds is not None:
        if args.seeds < 1:
            raise UsageError("--seeds must be at least 1")
        settings.random_seeds = args.seeds
    if args.icr_max_iterations is not None:
        if args.icr_max_iterations < 0:
            raise UsageError("--icr-max-iterations must be at least 0")
        settings.icr_max_iterations = args.icr_max_iterations
    if args.decode:
        settings.decode = True
        settings.decode_sentences = args.test_sentences or settings.decode_sentences
        settings.pop_limits = tuple(args.pop_limits) if args.pop_limits else settings.pop_limits
    if args.extraction_settings:
        if args.decode:
            raise UsageError("--extraction-settings and --decode are separate runs")
        settings.extraction_settings = True
    pairs = tables.PAIRS if args.pair == "both" else (args.pair or "es-en",)
    if args.rules:
        if args.pair == "both":
            raise UsageError("--rules names one table: give --pair es-en or zh-en (or no --pair)")
        found = {args.pair or os.path.basename(args.rules): args.rules}
    else:
        found = {pair: tables.find_pair_table(pair) for pair in pairs}
        if not any(found.values()):
            raise UsageError("no rule table for " + " or ".join(pairs) + ": looked for "
                             + ", ".join(p for pair in pairs for p in tables.pair_rule_tables(pair))
                             + " (build one with `cky demo` or `cky extract`, or give --rules PATH)")
    results = tables.run(found, settings, log=log, work=args.work or os.path.join(DEFAULT_WORK, "binarization"))
    results["command"] = command_line()
    out = args.out or DEFAULT_BINARIZATION_OUT
    tables.write_report(results, out)
    print(tables.markdown(results))
    log(f"results in {out}")
    return 0


def speed(args: argparse.Namespace) -> int:
    from ..benchmark.speed import measure, summary_line
    from ..experiment import fixture_system, read_lines, store_for, write_decoder_config
    from ..tune.decoding import load_decoder

    config, sentences_file = args.config, args.input
    if config is None:
        work = args.work or os.path.join(DEFAULT_WORK, "quick")
        system = fixture_system(work)
        config = write_decoder_config(system, store_for(system, "icr"), os.path.join(work, "speed", "config.toml"))
        sentences_file = sentences_file or system.test_src
    if sentences_file is None:
        raise UsageError("--speed with --config needs --input FILE (the sentences to translate)")
    sentences = [s for s in read_lines(sentences_file) if s.strip()]
    if args.test_sentences:
        sentences = sentences[:args.test_sentences]
    if not sentences:
        raise UsageError(f"{sentences_file}: no sentences to translate")
    result = measure(load_decoder(config), sentences, warmup=args.warmup, repeats=args.repeats)
    result.update(config=os.path.abspath(config), input=os.path.abspath(sentences_file), command=command_line())
    out = args.out or DEFAULT_OUT
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "speed.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(summary_line(result))
    if args.startup:
        from ..benchmark.speed import startup, startup_line

        result["startup"] = startup(config, sentences)
        with open(os.path.join(out, "speed.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        print(startup_line(result["startup"]))
    return 0


def train(args: argparse.Namespace) -> int:
    """`cky bench --train` (decoder.benchmark.training)."""
    from pathlib import Path

    from ..benchmark import moses_training, training
    from ..benchmark.experiments import machine_info
    from ..data import build

    if args.pair == "both":
        raise UsageError("--train times one recipe: give --pair es-en or zh-en")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    recipe = f"bible-{args.pair or 'es-en'}"
    workers = args.workers or build.default_processes()
    out = Path(args.out or DEFAULT_OUT)
    moses, message = moses_training.find_moses(args.moses)
    log(message)
    if args.moses is not None and moses is None:
        raise UsageError(message)
    fresh = None
    if args.reuse is not None:
        directory = Path(args.reuse) if args.reuse else build.default_out(recipe, args.small)
    else:
        name = recipe + ("-small" if args.small else "")
        directory = out / "train" / name
        log(f"building {name} from plain text in {directory} (fresh)")
        weights = build.recipe_weights(recipe, args.small)
        fresh = training.run_build(lambda d: build.build(recipe, d, args.small, workers, weights=weights),
                                   directory)
    ours = training.read_build(directory)
    if moses is None:
        moses_report = {"found": False, "message": message}
    else:
        moses_report = training.moses_side(moses, ours, out / "train" / f"{ours['name']}-moses", workers,
                                           args.test_sentences, log)
    content = training.report(ours, moses_report, machine_info(), command_line(), fresh)
    json_path, md_path = training.write_report(content, out)
    print(training.markdown(content))
    log(f"results in {json_path} and {md_path}")
    return 0 if not moses_report.get("error") else 1
