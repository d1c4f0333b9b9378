"""IBM Model 1 (Brown et al. 1993): t(target word | source word), EM from uniform, with NULL.

Used twice by the SDIG system: as a heuristic of the tree partitioning (section 3) and as
the translation probability of the word-pair ETs that give the decoder coverage (section 4).
EM runs on flat numpy arrays over every co-occurring (source word, target word) token pair
of the corpus, so an iteration over the Bible is a few bincounts.
"""
from __future__ import annotations

import numpy as np

NULL = "<null>"


class Model1:
    """t(e | f) over word strings; `prob(f, e)` is 0.0 for pairs never seen together."""

    def __init__(self, table: dict[str, dict[str, float]]):
        self.table = table

    def prob(self, f: str, e: str) -> float:
        return self.table.get(f, {}).get(e, 0.0)

    def best(self, f: str, k: int, threshold: float = 0.0) -> list[tuple[str, float]]:
        """The k likeliest target words of f with t(e|f) >= threshold, likeliest first."""
        options = sorted(self.table.get(f, {}).items(), key=lambda item: (-item[1], item[0]))
        return [(e, p) for e, p in options[:k] if p >= threshold]


def train_model1(sources: list[list[str]], targets: list[list[str]], iterations: int = 5,
                 prune: float = 1e-4) -> Model1:
    """Model 1 t(e|f) trained on sentence pairs (each f sentence gets a NULL word)."""
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} source sentences for {len(targets)} target sentences")
    f_vocab: dict[str, int] = {NULL: 0}
    e_vocab: dict[str, int] = {}
    f_ids, e_ids, groups = [], [], []
    group = 0
    for f_sentence, e_sentence in zip(sources, targets):
        if not e_sentence:
            continue
        fs = np.array([0] + [f_vocab.setdefault(w, len(f_vocab)) for w in f_sentence], dtype=np.int64)
        es = np.array([e_vocab.setdefault(w, len(e_vocab)) for w in e_sentence], dtype=np.int64)
        # every (f, e) token pair; one group per target token (its denominator in the E step)
        f_ids.append(np.tile(fs, len(es)))
        e_ids.append(np.repeat(es, len(fs)))
        groups.append(np.repeat(np.arange(group, group + len(es)), len(fs)))
        group += len(es)
    if not f_ids:
        return Model1({})
    f_all, e_all, group_all = np.concatenate(f_ids), np.concatenate(e_ids), np.concatenate(groups)
    keys = f_all * len(e_vocab) + e_all
    pair_keys, pair_of_token = np.unique(keys, return_inverse=True)
    pair_f = pair_keys // len(e_vocab)
    pair_e = pair_keys % len(e_vocab)
    t = np.full(len(pair_keys), 1.0 / len(e_vocab))
    for _ in range(iterations):
        p = t[pair_of_token]
        denominators = np.bincount(group_all, weights=p, minlength=group)
        counts = np.bincount(pair_of_token, weights=p / denominators[group_all], minlength=len(pair_keys))
        totals = np.bincount(pair_f, weights=counts, minlength=len(f_vocab))
        t = counts / totals[pair_f]
    f_words = list(f_vocab)
    e_words = list(e_vocab)
    table: dict[str, dict[str, float]] = {}
    for f, e, p in zip(pair_f.tolist(), pair_e.tolist(), t.tolist()):
        if p >= prune:
            table.setdefault(f_words[f], {})[e_words[e]] = p
    return Model1(table)
