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

import json
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


# ---- starting up --------------------------------------------------------------------------------------

# Run in a fresh interpreter: the times from its start (the `cky translate` a user runs) to the
# decoder open and to the first raw sentence translated, and the process's peak RSS.
_STARTUP_CHILD = r"""
import json, resource, sys, time
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
started = time.perf_counter()
from decoder.decoder import Decoder
decoder = Decoder.from_config(sys.argv[1])
opened, opened_cpu = time.perf_counter(), cpu()
translation = decoder.translate(sys.argv[2])
first, first_cpu = time.perf_counter(), cpu()
for sentence in sys.argv[3:]:
    decoder.translate(sentence)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"open_seconds": opened - started, "first_sentence_seconds": first - started,
                  "open_cpu_seconds": opened_cpu, "first_sentence_cpu_seconds": first_cpu,
                  "store_open_seconds": decoder.load_seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mb": usage.ru_maxrss / 1024, "sentences": len(sys.argv) - 2,
                  "first_translation": translation.text}))
"""


def startup(config: str, sentences: list[str], runs: int = 3) -> dict:
    """Start a decoder on `config` in `runs` fresh processes, each translating the first sentence, then
    the rest (raw text): the seconds from the interpreter's start (imports included) to the open
    decoder and to the first translation, and the peak RSS after all sentences. The first run may
    prepare the grammar (decoder.search.prepared_grammar); the figures are the median of the runs
    after it, and the first run is reported on its own. CPU seconds count from the process's start
    (the interpreter's own start-up included)."""
    import os
    import subprocess
    import sys

    if not sentences:
        raise ValueError("no sentences to translate")
    measured = []
    for _ in range(max(2, runs + 1)):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _STARTUP_CHILD, os.path.abspath(config), *sentences],
                              capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"the decoder did not start on {config}: {done.stderr.strip().splitlines()[-1:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["process_seconds"] = time.perf_counter() - started
        measured.append(result)
    later = measured[1:]

    def median(key):
        return float(np.median([m[key] for m in later]))

    return {"config": os.path.abspath(config), "sentences": len(sentences), "runs": len(later),
            "first_run": measured[0], **{key: median(key) for key in
                                         ("open_seconds", "first_sentence_seconds", "open_cpu_seconds",
                                          "first_sentence_cpu_seconds", "store_open_seconds", "cpu_seconds",
                                          "peak_rss_mb", "process_seconds")},
            "first_translation": measured[-1]["first_translation"]}


def startup_line(result: dict) -> str:
    return (f"start-up: decoder open {result['open_seconds']:.2f} s ({result['open_cpu_seconds']:.2f} CPU s) and "
            f"first sentence translated {result['first_sentence_seconds']:.2f} s "
            f"({result['first_sentence_cpu_seconds']:.2f} CPU s) after the interpreter started (median of "
            f"{result['runs']} fresh processes; the first, which may prepare the grammar: "
            f"{result['first_run']['first_sentence_seconds']:.2f} s); peak RSS {result['peak_rss_mb']:,.0f} MB "
            f"after {result['sentences']} sentences")
