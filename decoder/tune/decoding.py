"""Driving the decoder from tuning and benchmarks: a decoder for given weights and settings, k-best lists.

Weights and settings are changed by deriving a config (decoder.tune.config) and
building the decoder from it with Decoder.from_mapping, so that tuning uses
exactly what `cky translate --config` would (the same keys and checks).
"""
from __future__ import annotations

import functools
import os

from ..batch import translate_batch
from ..text import tokenized_input
from .config import absolute_paths, read_config, with_settings


def derived_config(config_path: str, weights: dict | None = None, **settings) -> dict:
    """The config at config_path with these weights and settings, its paths made absolute."""
    config = read_config(config_path)
    base_dir = os.path.dirname(os.path.abspath(config_path))
    return absolute_paths(with_settings(config, weights, **settings), base_dir)


def decoder_from_config(config: dict, source: str | None = None):
    """The Decoder a config dict describes (Decoder.from_mapping; relative paths: to the working
    directory, so give derived_config's absolute ones). Errors name `source`, the file it came from."""
    from ..decoder import Decoder

    return Decoder.from_mapping(config, source=source)


def load_decoder(config_path: str, weights: dict | None = None, **settings):
    """The decoder of the config at config_path with these weights and settings changed."""
    return decoder_from_config(derived_config(config_path, weights, **settings), source=config_path)


def model_weights(decoder, config: dict) -> dict:
    """Every feature's weight as the decoder uses it (documented defaults for those the config omits)."""
    weights = getattr(decoder, "weights", None)
    for attribute in ("by_name", "as_dict"):
        value = getattr(weights, attribute, None)
        if value is not None:
            return dict(value() if callable(value) else value)
    if isinstance(weights, dict):
        return dict(weights)
    return dict(config.get("weights", {}))


def kbest_job(decoder, sentence: str, k: int, unique: bool = True) -> list[tuple[str, dict]]:
    """One sentence's k-best list as plain (text, features) pairs (picklable, for worker processes);
    the sentence is tokenized text, and so are the texts."""
    return [(t.text, dict(t.features)) for t in decoder.kbest(sentence, k, unique=unique, **tokenized_input(decoder))]


def kbest_lists(decoder, sentences, k: int, workers: int = 1, progress: bool = True,
                unique: bool = True) -> list[list]:
    """The k-best list of every sentence; a sentence that failed gets an empty list."""
    job = functools.partial(kbest_job, k=k, unique=unique)
    results = translate_batch(decoder, sentences, workers=workers, job=job, progress=progress)
    return [result if isinstance(result, list) else [] for result in results]


def stats_job(decoder, sentence: str) -> dict:
    """One sentence's 1-best text, score, features and search statistics (picklable); the sentence is
    tokenized text, and so is the text."""
    translation = decoder.translate(sentence, **tokenized_input(decoder))
    return {"text": translation.text, "score": float(translation.score), "features": dict(translation.features),
            "stats": dict(translation.stats or {})}
