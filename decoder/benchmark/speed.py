"""`cky bench --speed`: how fast one decoding process translates, in words and sentences per second.

Like spaCy's `benchmark speed`: a few warm-up sentences first (loading and
first-touch costs are not counted), then the sentences are translated
`repeats` times one by one in this process, each timed on its own; the speed
is total words over total seconds of the fastest repeat of each sentence,
with a 95% bootstrap confidence interval over sentences (Efron and Tibshirani
1993), so that one slow sentence or a busy moment on a shared machine shows
as a wide interval rather than a wrong number.
"""
from __future__ import annotations

import time

import numpy as np

from ..text import tokenized_input

BOOTSTRAP_SAMPLES = 1000
CONFIDENCE = 0.95


def measure(decoder, sentences: list[str], warmup: int = 3, repeats: int = 3, seed: int = 0) -> dict:
    """Time decoder.translate on every sentence `repeats` times after `warmup` untimed sentences."""
    if not sentences:
        raise ValueError("no sentences to time")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    given = tokenized_input(decoder)  # the sentences are tokenized text
    for sentence in sentences[:warmup]:
        decoder.translate(sentence, **given)
    seconds = np.empty((repeats, len(sentences)))
    failed = 0
    for repeat in range(repeats):
        for i, sentence in enumerate(sentences):
            started = time.perf_counter()
            translation = decoder.translate(sentence, **given)
            seconds[repeat, i] = time.perf_counter() - started
            failed += repeat == 0 and not translation
    fastest = seconds.min(axis=0)
    words = np.array([len(sentence.split()) for sentence in sentences], dtype=float)
    return {"sentences": len(sentences), "words": int(words.sum()), "repeats": repeats, "warmup": warmup,
            "failed": int(failed), "seconds": float(fastest.sum()),
            "words_per_second": float(words.sum() / fastest.sum()),
            "sentences_per_second": float(len(sentences) / fastest.sum()),
            "words_per_second_interval": bootstrap_interval(words, fastest, seed)}


def bootstrap_interval(words: np.ndarray, seconds: np.ndarray, seed: int = 0,
                       samples: int = BOOTSTRAP_SAMPLES, confidence: float = CONFIDENCE) -> list[float]:
    """The `confidence` interval of sum(words) / sum(seconds) over sentences resampled with replacement."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(words), size=(samples, len(words)))
    rates = words[draws].sum(axis=1) / seconds[draws].sum(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(rates, [tail, 100 - tail])
    return [float(low), float(high)]


def summary_line(result: dict) -> str:
    low, high = result["words_per_second_interval"]
    return (f"{result['words_per_second']:,.1f} words/s (95% interval {low:,.1f}-{high:,.1f}), "
            f"{result['sentences_per_second']:,.2f} sentences/s over {result['sentences']} sentences "
            f"({result['words']} words, fastest of {result['repeats']} repeats, one process)")
