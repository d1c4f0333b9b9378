"""`cky tune`: tune the feature weights of a decoder config with MERT on a dev set.

    cky tune --config model/config.toml --dev-src dev.es --dev-ref dev.en [--out model/tuned.toml]

Each iteration decodes the dev set's k-best lists (--kbest, default 100) with
the current weights, merges them with all earlier lists and optimizes BLEU
over them (decoder.tune.mert). The new config is the input config with the
tuned weights (and a header saying how they were obtained); a JSON log of
every iteration is written beside it.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from ..evaluate import TOKENIZERS, read_lines
from ..tune.config import read_config, with_settings, write_config
from ..tune.decoding import derived_config, decoder_from_config, kbest_lists, model_weights
from ..tune.mert import run_mert

log = logging.getLogger("cky.tune")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="decoder config (TOML) with the starting weights")
    parser.add_argument("--dev-src", required=True, help="dev source sentences, one a line")
    parser.add_argument("--dev-ref", required=True, nargs="+", help="dev reference file(s)")
    parser.add_argument("--out", help="tuned config to write (default: CONFIG with .tuned.toml)")
    parser.add_argument("--kbest", type=int, default=100, help="k-best list size per iteration (default: 100)")
    parser.add_argument("--non-unique", action="store_true",
                        help="k-best derivations instead of distinct translations (faster k-best)")
    parser.add_argument("--max-iterations", type=int, default=10, help="most decoding iterations (default: 10)")
    parser.add_argument("--restarts", type=int, default=20, help="random starting points per optimization "
                                                                 "(default: 20)")
    parser.add_argument("--random-directions", type=int, default=0,
                        help="random search directions besides the coordinate axes (default: 0)")
    parser.add_argument("--trust-region", type=float, default=0.2,
                        help="most each weight moves per iteration, relative to its size "
                             "(default: 0.2; 0: unbounded, as in Och 2003)")
    parser.add_argument("--fixed", nargs="*", default=[], metavar="FEATURE", help="features not to tune")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random restarts (default: 0)")
    parser.add_argument("--tokenize", choices=TOKENIZERS, default="13a",
                        help="sacrebleu tokenizer for BLEU, as in cky evaluate (default: 13a)")
    parser.add_argument("--workers", type=int, default=1, help="decoding processes (default: 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def default_output(config_path: str) -> str:
    stem = config_path[:-5] if config_path.endswith(".toml") else config_path
    return stem + ".tuned.toml"


def tune(config_path: str, dev_sentences: list[str], references, out_path: str, kbest: int = 100,
         max_iterations: int = 10, restarts: int = 20, random_directions: int = 0, fixed=(), seed: int = 0,
         tokenize: str = "13a", workers: int = 1, progress: bool = True, unique: bool = True,
         trust_region: float | None = 0.2) -> dict:
    """Run MERT and write the tuned config; returns a summary (also written as OUT.log.json)."""
    started = time.perf_counter()
    config = read_config(config_path)
    first_decoder = decoder_from_config(derived_config(config_path))
    initial = model_weights(first_decoder, config)
    decoders = {tuple(sorted(initial.items())): first_decoder}

    def decode_kbest(weights: dict) -> list:
        key = tuple(sorted(weights.items()))
        decoder = decoders.pop(key, None) or decoder_from_config(derived_config(config_path, weights))
        decoders.clear()  # one decoder (one LM) alive at a time
        return kbest_lists(decoder, dev_sentences, kbest, workers=workers, progress=progress, unique=unique)

    result = run_mert(decode_kbest, references, initial, max_iterations=max_iterations, restarts=restarts,
                      random_directions=random_directions, seed=seed, tokenize=tokenize, fixed=fixed,
                      progress=progress, trust_region=trust_region or None)
    header = (f"MERT-tuned weights from {config_path}: dev BLEU {result.bleu:.2f} on the merged k-best lists "
              f"(tokenize {tokenize}), {len(result.history)} iterations; {result.stopped}")
    tuned = with_settings(config, result.weights)
    write_config(tuned, out_path, header=header)
    summary = {"config": config_path, "out": out_path, "initial_weights": initial, "weights": result.weights,
               "bleu": result.bleu, "stopped": result.stopped, "history": result.history,
               "settings": {"kbest": kbest, "max_iterations": max_iterations, "restarts": restarts,
                            "random_directions": random_directions, "seed": seed, "tokenize": tokenize,
                            "unique_kbest": unique, "trust_region": trust_region,
                            "dev_sentences": len(dev_sentences)},
               "seconds": time.perf_counter() - started}
    with open(out_path + ".log.json", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    return summary


def main(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        sentences = read_lines(args.dev_src)
        references = [read_lines(path) for path in args.dev_ref]
    except OSError as error:
        print(f"cky tune: {error}", file=sys.stderr)
        return 1
    for path, stream in zip(args.dev_ref, references):
        if len(stream) != len(sentences):
            print(f"cky tune: {path} has {len(stream)} lines but {args.dev_src} has {len(sentences)}",
                  file=sys.stderr)
            return 1
    out = args.out or default_output(args.config)
    summary = tune(args.config, sentences, references, out, args.kbest, args.max_iterations, args.restarts,
                   args.random_directions, args.fixed, args.seed, args.tokenize, args.workers,
                   progress=not args.quiet, unique=not args.non_unique, trust_region=args.trust_region)
    for step in summary["history"]:
        optimized = step.get("optimized_bleu")
        print(f"iteration {step['iteration']}: dev BLEU {step['decoded_bleu']:.2f}"
              + (f" -> {optimized:.2f} on {step['pool_size']} hypotheses" if optimized is not None else ""))
    print(f"{summary['stopped']}; tuned weights written to {out} (log: {out}.log.json)")
    return 0

