"""Tuning a decoder config with MERT: decode k-best lists, optimize BLEU, write the tuned config.

    from decoder.tune import tune
    summary = tune("model/config.toml", dev_sentences, [references], "elsewhere/tuned.toml")

After each iteration the loop's state is saved beside the output (decoder.tune.checkpoint); an
interrupted run (Ctrl-C: Interrupted) continues from there with `resume=True`.

`cky tune` (decoder.tune.cli) is the command around it; bench calls it directly.
"""
from __future__ import annotations

import json
import os
import time

from ..config import relocate_paths
from ..errors import ConfigError, Interrupted, OutputError, SettingsError
from ..outputs import atomic_write, check_writable, is_stream
from .checkpoint import checkpoint_path, file_digest, load_state, save_state, text_digest
from .config import check_output_path, read_config, with_settings, write_config
from .decoding import decoder_from_config, derived_config, kbest_lists, model_weights
from .mert import run_mert


def default_output(config_path: str) -> str:
    stem = config_path[:-5] if config_path.endswith(".toml") else config_path
    return stem + ".tuned.toml"


def tune(config_path: str, dev_sentences: list[str], references, out_path: str, kbest: int = 100,
         max_iterations: int = 10, restarts: int = 20, random_directions: int = 0, fixed=(), seed: int = 0,
         tokenize: str = "13a", workers: int = 1, progress: bool = True, unique: bool = True,
         trust_region: float | None = 0.2, resume: bool = False) -> dict:
    """Run MERT and write the tuned config; returns a summary (also written as OUT.log.json). With
    `resume`, continue the run whose checkpoint is beside out_path (see the module docstring)."""
    started = time.perf_counter()
    check_output_path(out_path)  # before the decoding, not after it
    check_writable(out_path)  # (a read-only directory or file system too)
    state_path = checkpoint_path(out_path)
    if is_stream(state_path):  # (else it would fail only after the first iteration's decoding)
        raise OutputError(state_path, "is not a regular file (a directory, device or pipe): MERT's checkpoint is "
                                      "written there, beside --out; move it away")
    config = read_config(config_path)

    def decoder_for(weights: dict | None = None):
        try:
            return decoder_from_config(derived_config(config_path, weights))
        except ConfigError as error:  # name the file the mistake is in
            if error.path is None:
                raise ConfigError(config_path, error.reason) from None
            raise

    first_decoder = decoder_for()
    initial = model_weights(first_decoder, config)
    unknown = [name for name in fixed if name not in initial]
    if unknown:  # a misspelt name would leave the feature tuned
        raise SettingsError(None, f"fixed feature `{unknown[0]}` is not a feature of {config_path} "
                                  f"(its features: {', '.join(initial)})")
    decoders = {tuple(sorted(initial.items())): first_decoder}
    settings = {"kbest": kbest, "restarts": restarts, "random_directions": random_directions, "seed": seed,
                "tokenize": tokenize, "unique_kbest": unique, "trust_region": trust_region,
                "dev_sentences": len(dev_sentences)}
    # what the result depends on, besides max_iterations (a resumed run may go on for longer)
    identity = {"config": os.path.abspath(config_path), "config_sha256": file_digest(config_path),
                "dev_sha256": text_digest(dev_sentences),
                "references_sha256": [text_digest(stream) for stream in references],
                "initial_weights": initial, "fixed": sorted(fixed), **settings}
    resume_from = load_state(state_path, identity) if resume else None

    def decode_kbest(weights: dict) -> list:
        key = tuple(sorted(weights.items()))
        decoder = decoders.pop(key, None) or decoder_for(weights)
        decoders.clear()  # one decoder (one LM) alive at a time
        return kbest_lists(decoder, dev_sentences, kbest, workers=workers, progress=progress, unique=unique)

    saved = [resume_from.iteration if resume_from else 0]  # the last iteration checkpointed

    def checkpoint(state) -> None:
        save_state(state_path, state, identity)
        saved[0] = state.iteration

    try:
        result = run_mert(decode_kbest, references, initial, max_iterations=max_iterations, restarts=restarts,
                          random_directions=random_directions, seed=seed, tokenize=tokenize, fixed=fixed,
                          progress=progress, trust_region=trust_region or None, resume_from=resume_from,
                          checkpoint=checkpoint)
    except KeyboardInterrupt:
        if not saved[0]:
            raise Interrupted("interrupted in the first iteration; nothing to resume from") from None
        raise Interrupted(f"interrupted; MERT's state after iteration {saved[0]} is saved in {state_path} "
                          f"(continue with --resume)") from None
    header = (f"MERT-tuned weights from {config_path}: dev BLEU {result.bleu:.2f} on the merged k-best lists "
              f"(tokenize {tokenize}), {len(result.history)} iterations; {result.stopped}")
    # The paths were written for the input config's directory: make them load from the output's.
    tuned = relocate_paths(with_settings(config, result.weights), os.path.dirname(os.path.abspath(config_path)),
                           os.path.dirname(os.path.abspath(out_path)))
    write_config(tuned, out_path, header=header)
    summary = {"config": config_path, "out": out_path, "initial_weights": initial, "weights": result.weights,
               "bleu": result.bleu, "stopped": result.stopped, "history": result.history,
               "settings": {"max_iterations": max_iterations, **settings},
               "resumed_after": resume_from.iteration if resume_from else None,
               "seconds": time.perf_counter() - started}
    with atomic_write(out_path + ".log.json") as f:
        json.dump(summary, f, indent=2)
    if os.path.exists(state_path):
        os.remove(state_path)  # the run is finished: the log holds its history
    return summary
