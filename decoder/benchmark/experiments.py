"""The experiments of `cky bench`: Xiao et al. 2009 section 4 and Venugopal et al. 2007 section 6.

1. grammar cost Q(G') per strategy (random: mean of 5 seeds), icr's cost per iteration (Xiao Table 2, Fig. 6/7);
2. BLEU on dev and test per strategy after MERT, paired bootstrap against `left` (Xiao Table 3);
3. BLEU, edges per sentence and model score against the pop limit, per strategy, with common weights
   (Xiao Fig. 8-10), and on it monolingual against synchronous binarization (Zhang et al. 2006, Fig. 7)
   and the two claims of decoder.benchmark.goals;
4. mean and variance of competing items per cell against span length, per strategy (Xiao Fig. 11-12);
5. accumulated model cost against novel LM queries and against seconds as the pop limit varies
   (Venugopal Fig. 3-5);
6. sentences per second and peak memory of one decoding process.

They run on a `System` (decoder.experiment): the tiny fixture system for
`cky bench --quick`, else a Bible build (`cky data bible-PAIR [--small]`). Experiments 2-6 need
the decoder (decoder.decoder); when it is missing they are reported as skipped
with the reason.
"""
from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from ..experiment import (PACKAGE_ROOT, System, cky_environment, filtered_rules, read_lines, store_for,
                          write_decoder_config)
from .goals import goals

STRATEGIES = ("monolingual", "left", "right", "random", "icr")
RANDOM_SEEDS = 5
BASELINE = "left"
WEIGHT_SOURCES = {"common_weights": ("left", "build"), "mert_start": ("defaults", "build")}


# ---- the machine --------------------------------------------------------------------------------------

def machine_info() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "processor": platform.processor()}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu_model"] = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                                     None)
        with open("/proc/meminfo") as f:
            info["memory_gb"] = round(int(f.readline().split()[1]) / 1024 ** 2, 1)
    except OSError:
        pass
    versions = {}
    for module in ("numpy", "sacrebleu", "matplotlib", "numba", "Cython", "kenlm"):
        try:
            versions[module] = __import__(module).__version__
        except Exception:  # not installed, or no __version__
            versions[module] = None
    info["versions"] = versions
    try:
        info["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PACKAGE_ROOT, capture_output=True,
                                            text=True).stdout.strip()
    except OSError:
        pass
    return info


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---- 1. grammar cost -------------------------------------------------------------------------------

def grammar_costs(rules_path: str, strategies=STRATEGIES, seeds: int = RANDOM_SEEDS,
                  max_iterations: int = 20) -> dict:
    """Q(G') and sizes per strategy; random: mean (and each) over `seeds` seeds; icr: cost per iteration."""
    from ..binarize import binarize
    from ..grammar import read_rules

    rules = list(read_rules(rules_path))
    results = {"rules": rules_path, "source_rules": len(rules), "strategies": {}}
    for strategy in strategies:
        runs = []
        for seed in (range(seeds) if strategy == "random" else [0]):
            report = binarize(rules, strategy, seed=seed, max_iterations=max_iterations).report
            runs.append({key: report[key] for key in ("cost", "binary_rules", "virtual_nonterminals",
                                                      "non_binarizable", "seconds", "iterations")})
        entry = {key: statistics.mean(run[key] for run in runs)
                 for key in ("cost", "binary_rules", "virtual_nonterminals", "non_binarizable", "seconds")}
        if strategy == "random":
            entry["seeds"] = seeds
            entry["cost_by_seed"] = [run["cost"] for run in runs]
            entry["cost_stdev"] = statistics.stdev(entry["cost_by_seed"]) if seeds > 1 else 0.0
        if strategy == "icr":
            entry["cost_by_iteration"] = runs[0]["iterations"]
        results["strategies"][strategy] = entry
    return results


# ---- the decoder ----------------------------------------------------------------------------------

def decoder_missing() -> str | None:
    """Why the decoder cannot be used (None if it can)."""
    try:
        from ..decoder import Decoder  # noqa: F401
        from ..search.driver import ChartSearchDriver  # noqa: F401
    except Exception as error:  # ImportError: decoder._ext.compiled_module says how to build what is missing
        return f"decoder.decoder is not importable ({type(error).__name__}: {error})"
    return None


def decode_with_stats(config_path: str, sentences: list[str], workers: int = 1, weights: dict | None = None,
                      **settings) -> list[dict]:
    """1-best text, score, features and search stats of every sentence (failed: text '' and an error)."""
    from ..batch import translate_batch
    from ..tune.decoding import load_decoder, stats_job

    decoder = load_decoder(config_path, weights, **settings)
    results = translate_batch(decoder, sentences, workers=workers, job=stats_job)
    return [r if isinstance(r, dict) else {"text": "", "score": float("nan"), "features": {}, "stats": {},
                                           "error": r.error} for r in results]


def summarize_decoding(results: list[dict], references: list[str], tokenize: str) -> dict:
    """BLEU and totals of the search statistics over a decoded set."""
    from ..evaluate import corpus_bleu

    def total(key):
        return sum(float(r["stats"].get(key, 0.0) or 0.0) for r in results)

    n = max(len(results), 1)
    seconds = total("seconds") or total("search_seconds")
    return {
        "bleu": corpus_bleu([r["text"] for r in results], references, tokenize=tokenize).score,
        "sentences": len(results), "failed": sum("error" in r for r in results),
        "model_cost": -sum(r["score"] for r in results if r["score"] == r["score"]),
        "edges_per_sentence": total("edges_proposed") / n, "edges_kept_per_sentence": total("edges_kept") / n,
        "lm_queries": total("lm_queries"), "lm_queries_novel": total("lm_queries_novel"),
        "seconds": seconds, "sentences_per_second": len(results) / seconds if seconds > 0 else None,
    }


def cell_competition(results: list[dict]) -> dict:
    """Mean and variance of the items per cell by span length, pooled over sentences.

    Each sentence's stats give `items_per_cell` = {span length: [mean, variance]}
    over its cells of that length (there are words - length + 1 of them); the
    pooled variance is the law of total variance over all those cells.
    """
    pooled: dict[int, list] = {}
    for r in results:
        words = int(r["stats"].get("words", 0))
        for length, (mean, variance) in (r["stats"].get("items_per_cell") or {}).items():
            cells = words - int(length) + 1
            if cells > 0:
                pooled.setdefault(int(length), []).append((cells, float(mean), float(variance)))
    table = {}
    for length, parts in sorted(pooled.items()):
        cells = sum(c for c, _, _ in parts)
        mean = sum(c * m for c, m, _ in parts) / cells
        variance = sum(c * (v + (m - mean) ** 2) for c, m, v in parts) / cells
        table[length] = {"cells": cells, "mean": mean, "variance": variance}
    return table


def throughput(config_path: str, input_path: str, out_path: str, workers: int = 1) -> dict:
    """Wall time, sentences per second and peak memory of `cky translate` as its own process."""
    n = len(read_lines(input_path))
    started = time.perf_counter()
    with open(input_path, "rb") as stdin, open(out_path, "wb") as stdout:
        process = subprocess.Popen([sys.executable, "-m", "decoder.cli", "translate", "--config", config_path,
                                    "--pretokenized"]
                                   + (["--workers", str(workers)] if workers > 1 else []),
                                   stdin=stdin, stdout=stdout, stderr=subprocess.DEVNULL, env=cky_environment())
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: Popen must know
    seconds = time.perf_counter() - started
    return {"sentences": n, "seconds": seconds, "sentences_per_second": n / seconds, "workers": workers,
            "peak_memory_mb": usage.ru_maxrss / 1024.0, "exit_status": os.waitstatus_to_exitcode(status)}


# ---- all experiments ---------------------------------------------------------------------------------

def system_weights(system: System) -> tuple[dict | None, str]:
    """The weights of the system's build (decoder.experiment.build_weights), or none for a system
    without a build (the fixture): the decoder's defaults."""
    from ..experiment import build_weights

    if system.build is None:
        return None, "the decoder's defaults (the system has no build directory)"
    return build_weights(system.build)


@dataclass
class Settings:
    strategies: tuple = STRATEGIES
    random_seeds: int = RANDOM_SEEDS
    icr_max_iterations: int = 20
    tune: bool = True
    tune_strategies: tuple | None = None  # None: all; the others decode with the baseline's tuned weights
    kbest: int = 100
    unique_kbest: bool = True
    mert_iterations: int = 5
    mert_restarts: int = 10
    pop_limits: tuple = (10, 50, 100, 200, 1000)
    default_pop_limit: int = 100
    cost_on_full_grammar: bool = False  # grammar cost of the whole table (else: filtered to dev+test)
    dev_sentences: int | None = None  # None: all
    test_sentences: int | None = None
    sweep_sentences: int | None = None  # test sentences of the pop-limit sweep (3 and 5)
    bootstrap_samples: int = 1000
    workers: int = 1
    # The weights of experiments 3 and 5 (one vector for every strategy and pop limit): "left", the
    # baseline's weights after experiment 2 (Xiao et al.), or "build", the build's own config.toml
    # (decoder.experiment.build_weights: `cky train`'s MERT on the whole dev set).
    common_weights: str = "left"
    # Where MERT starts: "defaults", the decoder's default weights, or "build", the build's config.toml.
    mert_start: str = "defaults"


QUICK = Settings(kbest=10, mert_iterations=2, mert_restarts=2, pop_limits=(2, 10, 50), default_pop_limit=10,
                 dev_sentences=20, bootstrap_samples=200, unique_kbest=False)


def run_all(system: System, settings: Settings, log=print) -> dict:
    """Every experiment on the system; what cannot run is listed under "skipped" with the reason."""
    started = time.perf_counter()
    results = {"system": asdict(system), "settings": asdict(settings), "machine": machine_info(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "skipped": {}}
    cost_rules = system.rules if settings.cost_on_full_grammar else filtered_rules(system)
    log(f"1. grammar cost of {cost_rules}")
    results["grammar_cost"] = grammar_costs(cost_rules, settings.strategies, settings.random_seeds,
                                            settings.icr_max_iterations)
    results["grammar_cost"]["filtered_to_dev_and_test"] = not settings.cost_on_full_grammar
    missing = decoder_missing()
    if missing:
        for key in ("bleu", "pop_limit_sweep", "cell_competition", "model_cost", "throughput"):
            results["skipped"][key] = missing
        log(f"experiments 2-6 skipped: {missing}")
    else:
        results.update(decoding_experiments(system, settings, log))
        results["goals"] = goals(results["pop_limit_sweep"])
    results["seconds"] = time.perf_counter() - started
    results["peak_memory_mb_bench"] = peak_memory_mb()
    return results


def _first(lines: list[str], n: int | None) -> list[str]:
    return lines if n is None else lines[:n]


def decoding_experiments(system: System, settings: Settings, log=print) -> dict:
    from ..evaluate import paired_bootstrap
    from ..tune import tune
    from ..tune.config import read_config

    dev_src, dev_ref = _first(read_lines(system.dev_src), settings.dev_sentences), \
        _first(read_lines(system.dev_ref), settings.dev_sentences)
    test_src, test_ref = _first(read_lines(system.test_src), settings.test_sentences), \
        _first(read_lines(system.test_ref), settings.test_sentences)
    configs = os.path.join(system.work, "configs")
    outputs_dir = os.path.join(system.work, "outputs")
    os.makedirs(outputs_dir, exist_ok=True)
    build_weights_, build_weights_from = system_weights(system)
    start = build_weights_ if settings.mert_start == "build" else None
    start_from = build_weights_from if settings.mert_start == "build" else "the decoder's defaults"

    # 2. tune each strategy on dev, then translate dev and test with its weights
    bleu: dict = {}
    weights_by_strategy: dict = {}
    outputs: dict = {}
    # the baseline first: strategies that are not tuned reuse its weights
    order = sorted(settings.strategies, key=lambda s: s != BASELINE)
    for strategy in order:
        store = store_for(system, strategy)
        config = write_decoder_config(system, store, os.path.join(configs, f"{strategy}.toml"),
                                      weights=start, pop_limit=settings.default_pop_limit)
        entry: dict = {"store": store}
        tuned_here = settings.tune and (settings.tune_strategies is None or strategy in settings.tune_strategies)
        if settings.tune and not tuned_here:
            config = write_decoder_config(system, store, os.path.join(configs, f"{strategy}.baseline-weights.toml"),
                                          weights=weights_by_strategy[BASELINE],
                                          pop_limit=settings.default_pop_limit)
            entry["weights_from"] = BASELINE
        if tuned_here:
            log(f"2. tuning {strategy} on {len(dev_src)} dev sentences")
            tuned_path = os.path.join(configs, f"{strategy}.tuned.toml")
            summary = tune(config, dev_src, [dev_ref], tuned_path, kbest=settings.kbest,
                           max_iterations=settings.mert_iterations, restarts=settings.mert_restarts,
                           tokenize=system.tokenize, workers=settings.workers, progress=False,
                           unique=settings.unique_kbest)
            entry["mert"] = {"iterations": len(summary["history"]), "stopped": summary["stopped"],
                             "bleu_by_iteration": [h["decoded_bleu"] for h in summary["history"]],
                             "seconds": summary["seconds"]}
            config = tuned_path
        weights_by_strategy[strategy] = read_config(config).get("weights") or dict(start or {})
        for split, sentences, references in (("dev", dev_src, dev_ref), ("test", test_src, test_ref)):
            log(f"2. translating {split} with {strategy}")
            decoded = decode_with_stats(config, sentences, settings.workers)
            outputs[(strategy, split)] = [r["text"] for r in decoded]
            with open(os.path.join(outputs_dir, f"{strategy}.{split}.txt"), "w", encoding="utf-8") as f:
                f.writelines(text + "\n" for text in outputs[(strategy, split)])
            entry[split] = summarize_decoding(decoded, references, system.tokenize)
            if split == "test":
                entry["cell_competition"] = cell_competition(decoded)
        entry["weights"] = weights_by_strategy[strategy]
        entry["config"] = config
        bleu[strategy] = entry
    bleu = {strategy: bleu[strategy] for strategy in settings.strategies}
    if BASELINE in settings.strategies:
        for split, references in (("dev", dev_ref), ("test", test_ref)):
            others = [(s, outputs[(s, split)]) for s in settings.strategies if s != BASELINE]
            significance = paired_bootstrap((BASELINE, outputs[(BASELINE, split)]), others, [references],
                                            tokenize=system.tokenize, samples=settings.bootstrap_samples)
            for strategy, result in significance.items():
                bleu[strategy][split]["bootstrap"] = result

    # 3 and 5: one weight vector for every strategy and pop limit (the baseline's tuned weights, or the
    # build's), so that model costs are comparable: binarization does not change the model, only the search.
    if settings.common_weights == "build":
        common, common_from = build_weights_ or {}, build_weights_from
    else:
        common = weights_by_strategy.get(BASELINE) or next(iter(weights_by_strategy.values()))
        common_from = (f"`{BASELINE}` after MERT" if settings.tune and (
            settings.tune_strategies is None or BASELINE in settings.tune_strategies) else start_from)
    sweep_src = _first(test_src, settings.sweep_sentences)
    sweep_ref = _first(test_ref, settings.sweep_sentences)
    sweep: dict = {}
    for strategy in settings.strategies:
        sweep[strategy] = {}
        config = os.path.join(configs, f"{strategy}.toml")
        for pop_limit in settings.pop_limits:
            log(f"3/5. {strategy} at pop limit {pop_limit}")
            decoded = decode_with_stats(config, sweep_src, settings.workers, weights=common, pop_limit=pop_limit)
            sweep[strategy][pop_limit] = summarize_decoding(decoded, sweep_ref, system.tokenize)

    # 6. one decoding process end to end at the default pop limit (icr, else the first strategy)
    strategy = "icr" if "icr" in settings.strategies else settings.strategies[0]
    log(f"6. throughput and peak memory of cky translate ({strategy})")
    test_input = os.path.join(outputs_dir, "throughput.input")
    with open(test_input, "w", encoding="utf-8") as f:
        f.writelines(s + "\n" for s in test_src)
    speed = throughput(bleu[strategy]["config"], test_input, os.path.join(outputs_dir, "throughput.output"))
    speed["strategy"] = strategy
    return {"bleu": bleu, "pop_limit_sweep": sweep,
            "cell_competition": {s: bleu[s].get("cell_competition", {}) for s in settings.strategies},
            "model_cost": {s: [{"pop_limit": p, "model_cost": v["model_cost"], "lm_queries_novel":
                                v["lm_queries_novel"], "seconds": v["seconds"], "bleu": v["bleu"]}
                               for p, v in sweep[s].items()] for s in settings.strategies},
            "throughput": speed, "common_weights": common, "common_weights_from": common_from,
            "mert_start": start_from}
