"""`cky evaluate`: BLEU and chrF with sacrebleu, and BLEU sufficient statistics for MERT.

    cky evaluate --hyp output.en --ref test.en                   # detokenized text (sacrebleu's 13a)
    cky evaluate --hyp output.tok --ref test.tok --tokenize none  # text already tokenized

From Python:

    corpus_bleu(hypotheses, references).score
    stats = BleuStatistics(references)                 # references tokenized once
    row = stats.sentence(i, hypothesis)                # int64[10]: sacrebleu's exact counts
    bleu_from_stats(rows.sum(axis=0))                  # == corpus BLEU of those hypotheses

The statistics come from sacrebleu's own segment code, so that MERT optimizes
exactly the BLEU that `cky evaluate` and the sacrebleu command line report.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from .errors import InputError
from .lines import read_lines  # noqa: F401  (the one line reader; tuning reads its files through here)

MAX_ORDER = 4
# A row of sufficient statistics: hypothesis length, closest reference length,
# matched n-grams (n = 1..4), hypothesis n-grams (n = 1..4); sacrebleu's layout.
N_STATS = 2 + 2 * MAX_ORDER
TOKENIZERS = ("13a", "none", "intl", "char", "zh", "flores101", "flores200")
# What sacrebleu's log gives a zero precision (its `my_log`).
LOG_OF_ZERO = -9999999999.0




def _as_reference_streams(references) -> list[list[str]]:
    """One reference stream (a list of sentences) per reference; accepts a single stream too."""
    if references and isinstance(references[0], str):
        return [list(references)]
    return [list(stream) for stream in references]


def bleu_metric(tokenize: str = "13a", lowercase: bool = False) -> BLEU:
    # force: with tokenize none the text is tokenized on purpose; no warning about tokenized periods
    return BLEU(tokenize=tokenize, lowercase=lowercase, force=tokenize == "none")


def corpus_bleu(hypotheses: Sequence[str], references, tokenize: str = "13a", lowercase: bool = False):
    """sacrebleu's corpus BLEU (a BLEUScore: `.score`, `.precisions`, `.bp`, ...)."""
    return bleu_metric(tokenize, lowercase).corpus_score(list(hypotheses), _as_reference_streams(references))


def corpus_chrf(hypotheses: Sequence[str], references, lowercase: bool = False):
    return CHRF(lowercase=lowercase).corpus_score(list(hypotheses), _as_reference_streams(references))


def paired_bootstrap(baseline: tuple[str, Sequence[str]], systems: list[tuple[str, Sequence[str]]], references,
                     tokenize: str = "13a", samples: int = 1000) -> dict[str, dict]:
    """Koehn 2004 paired bootstrap of BLEU against a baseline (sacrebleu's implementation).

    Returns {system name: {"bleu", "mean", "ci", "p_value"}} including the baseline (p_value None).
    A system whose output equals the baseline's gets p_value 1.0: sacrebleu's test
    would report its smallest p, 1/(samples+1), since no resample beats a zero difference.
    """
    from sacrebleu.significance import PairedTest

    named = [(baseline[0], list(baseline[1]))] + [(name, list(hyps)) for name, hyps in systems]
    test = PairedTest(named, {"BLEU": bleu_metric(tokenize)}, _as_reference_streams(references),
                      test_type="bs", n_samples=samples)
    _, scores = test()
    results = {}
    identical = {name for name, hyps in named[1:] if hyps == named[0][1]}
    for name, result in zip(scores["System"], scores["BLEU"]):
        p_value = 1.0 if name in identical else result.p_value
        results[name] = {"bleu": result.score, "mean": result.mean, "ci": result.ci, "p_value": p_value}
    return results


class BleuStatistics:
    """Sentence-level BLEU sufficient statistics against fixed references.

    `references` is one list of reference sentences per reference stream (or a
    single list). References are tokenized and counted once; `sentence(i, hyp)`
    gives sacrebleu's statistics row for hypothesis `hyp` of sentence i.
    """

    def __init__(self, references, tokenize: str = "13a", lowercase: bool = False):
        self.metric = bleu_metric(tokenize, lowercase)
        streams = _as_reference_streams(references)
        per_sentence = list(zip(*streams))
        # sacrebleu's Metric API for cached references: preprocess, then count n-grams.
        self._reference_info = [
            self.metric._extract_reference_info([self.metric._preprocess_segment(r) for r in refs])
            for refs in per_sentence
        ]

    def __len__(self) -> int:
        return len(self._reference_info)

    def sentence(self, index: int, hypothesis: str) -> np.ndarray:
        segment = self.metric._preprocess_segment(hypothesis)
        row = self.metric._compute_segment_statistics(segment, self._reference_info[index])
        return np.asarray(row, dtype=np.int64)

    def corpus(self, hypotheses: Sequence[str]) -> np.ndarray:
        """Statistics of one hypothesis per sentence, one row each."""
        return np.stack([self.sentence(i, h) for i, h in enumerate(hypotheses)])


def bleu_from_stats(stats) -> float:
    """Corpus BLEU (0-100) from summed statistics, exactly as sacrebleu computes it."""
    stats = [int(x) for x in stats]
    return BLEU.compute_bleu(correct=stats[2:2 + MAX_ORDER], total=stats[2 + MAX_ORDER:], sys_len=stats[0],
                             ref_len=stats[1], smooth_method="exp").score


def bleu_from_stats_array(stats: np.ndarray) -> np.ndarray:
    """`bleu_from_stats` for each row of an [m, N_STATS] array (for MERT's line search)."""
    stats = np.asarray(stats, dtype=np.float64).reshape(-1, N_STATS)
    sys_len, ref_len = stats[:, 0], stats[:, 1]
    correct, total = stats[:, 2:2 + MAX_ORDER], stats[:, 2 + MAX_ORDER:]
    with np.errstate(divide="ignore", invalid="ignore"):
        brevity = np.where(sys_len < ref_len,
                           np.where(sys_len > 0, np.exp(1.0 - ref_len / np.maximum(sys_len, 1e-300)), 0.0), 1.0)
        log_sum = np.zeros(len(stats))
        smooth = np.ones(len(stats))  # sacrebleu's 'exp' smoothing: halve each unmatched order
        stopped = np.zeros(len(stats), dtype=bool)  # an order with no n-grams ends the loop
        for n in range(MAX_ORDER):
            stopped |= total[:, n] == 0
            unmatched = ~stopped & (correct[:, n] == 0)
            smooth = np.where(unmatched, smooth * 2.0, smooth)
            precision = np.where(unmatched, 100.0 / (smooth * total[:, n]), 100.0 * correct[:, n] / total[:, n])
            log_sum += np.where(stopped, LOG_OF_ZERO, np.log(np.where(stopped, 1.0, precision)))
        score = brevity * np.exp(log_sum / MAX_ORDER)
    no_match = correct.sum(axis=1) == 0
    return np.where(no_match, 0.0, score)


def evaluate_files(hyp_path: str, ref_paths: Sequence[str], tokenize: str = "13a", lowercase: bool = False) -> dict:
    hypotheses = read_lines(hyp_path)
    references = [read_lines(path) for path in ref_paths]
    for path, stream in zip(ref_paths, references):
        if len(stream) != len(hypotheses):
            raise InputError(path, f"has {len(stream)} lines but {hyp_path} has {len(hypotheses)}")
    if not hypotheses:
        raise InputError(hyp_path, "no lines to score (the hypotheses and references are empty)")
    bleu_metric_ = bleu_metric(tokenize, lowercase)
    bleu = bleu_metric_.corpus_score(hypotheses, references)
    chrf_metric = CHRF(lowercase=lowercase)
    chrf = chrf_metric.corpus_score(hypotheses, references)
    return {
        "bleu": bleu.score, "bleu_text": str(bleu), "bleu_signature": str(bleu_metric_.get_signature()),
        "precisions": bleu.precisions, "brevity_penalty": bleu.bp, "sys_len": bleu.sys_len,
        "ref_len": bleu.ref_len, "chrf": chrf.score, "chrf_text": str(chrf),
        "chrf_signature": str(chrf_metric.get_signature()), "sentences": len(hypotheses),
    }
