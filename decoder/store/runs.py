"""Finding the source terminal runs of a grammar in a sentence.

Each run (a sequence of source word ids) is hashed with a polynomial rolling
hash over uint64 (wrapping arithmetic). The store keeps the run hashes sorted
(`run_hash_keys`) with the run behind each (`run_hash_runs`). Matching a
sentence hashes every n-gram up to `max_run_length` at once, looks the hashes
up with `searchsorted`, and compares the words of each candidate, so a hash
collision can cost time but never gives a wrong match.
"""
from __future__ import annotations

import numpy as np

from .format import OOV_ID

HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplication is a bijection mod 2**64


def hash_runs(offsets: np.ndarray, words: np.ndarray) -> np.ndarray:
    """uint64 hash of each run `words[offsets[i]:offsets[i+1]]` (all runs at once)."""
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    lengths = np.diff(offsets)
    hashes = np.zeros(len(lengths), dtype=np.uint64)
    max_length = int(lengths.max()) if len(lengths) else 0
    with np.errstate(over="ignore"):
        for k in range(max_length):
            live = lengths > k
            word = words[starts[live] + k].astype(np.uint64) + np.uint64(1)
            hashes[live] = hashes[live] * HASH_MULTIPLIER + word
    return hashes


def ngram_hashes(word_ids: np.ndarray, max_length: int) -> list[np.ndarray]:
    """For each length l = 1..max_length, the hashes of the n-grams word_ids[i:i+l] (index i)."""
    n = len(word_ids)
    out = []
    current = np.zeros(0, dtype=np.uint64)
    shifted = word_ids.astype(np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        for length in range(1, min(max_length, n) + 1):
            # the hash of word_ids[i:i+length] extends that of word_ids[i:i+length-1]
            if length == 1:
                current = shifted.copy()
            else:
                current = current[:-1] * HASH_MULTIPLIER + shifted[length - 1:]
            out.append(current)
    return out


def match_run_array(word_ids: np.ndarray, run_hash_keys: np.ndarray, run_hash_runs: np.ndarray,
                    run_offsets: np.ndarray, run_words: np.ndarray, max_run_length: int,
                    n_nonterminals: int) -> np.ndarray:
    """int32[k, 3] rows (start, end, symbol) for every span word_ids[start:end] that is a run.

    `symbol` is the run's symbol id (n_nonterminals + run index). Rows are sorted by (start, end).
    """
    word_ids = np.asarray(word_ids, dtype=np.int32)
    known = word_ids != OOV_ID
    rows = []
    for index, hashes in enumerate(ngram_hashes(word_ids, max_run_length)):
        length = index + 1
        starts = np.arange(len(hashes))
        # an n-gram with an unknown word matches nothing: skip it before the lookups
        if length == 1:
            ok = known
        else:
            ok = np.convolve((~known).astype(np.int64), np.ones(length, dtype=np.int64), mode="valid") == 0
        starts, hashes = starts[ok], hashes[ok]
        lo = np.searchsorted(run_hash_keys, hashes, side="left")
        hi = np.searchsorted(run_hash_keys, hashes, side="right")
        counts = hi - lo
        if not counts.any():
            continue
        # one candidate per (n-gram, run with that hash); almost always at most one
        candidate_starts = np.repeat(starts, counts)
        first = np.repeat(lo - np.cumsum(counts) + counts, counts)
        candidate_runs = run_hash_runs[first + np.arange(len(first))].astype(np.int64)
        run_starts = run_offsets[candidate_runs]
        same = (run_offsets[candidate_runs + 1] - run_starts) == length
        steps = np.arange(length)
        same[same] = (run_words[run_starts[same, None] + steps]
                      == word_ids[candidate_starts[same, None] + steps]).all(axis=1)
        if same.any():
            found = candidate_starts[same]
            rows.append(np.stack([found, found + length, candidate_runs[same] + n_nonterminals], axis=1))
    if not rows:
        return np.zeros((0, 3), dtype=np.int32)
    table = np.concatenate(rows).astype(np.int32)
    return table[np.lexsort((table[:, 1], table[:, 0]))]
