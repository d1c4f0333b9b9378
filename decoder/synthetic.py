"""Generated grammars for tests and benchmarks, shaped like GHKM rule tables.

Labels and words follow Zipf-like distributions; nonterminal orders are mostly
monotone (Zhang et al. 2006 found 86.8% of real rules monotone), some inverted,
and the rest random permutations (a few of which are not binarizable).
"""
from __future__ import annotations

import numpy as np

from .grammar import Rule

PENN_LABELS = ("NP", "VP", "PP", "S", "SBAR", "ADJP", "ADVP", "NN", "NNS", "VB", "VBD", "VBZ", "JJ", "RB",
               "IN", "DT", "PRP", "CC", "TO", "MD", "WHNP", "PRT", "CD", "NNP", "VBG", "VBN", "POS")


def zipf_choice(rng: np.random.Generator, n: int, size: int, exponent: float = 1.1) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** exponent
    return rng.choice(n, size=size, p=weights / weights.sum())


def random_grammar(n_rules: int, seed: int = 0, n_labels: int = 27, source_vocab: int = 2000,
                   target_vocab: int = 2000, mean_nonterminals: float = 3.0, max_nonterminals: int = 6,
                   terminal_probability: float = 0.35, monotone: float = 0.8, inverted: float = 0.07,
                   n_features: int = 4) -> list[Rule]:
    """`n_rules` random rules (duplicates possible, as in any large table)."""
    rng = np.random.default_rng(seed)
    labels = [PENN_LABELS[i] if i < len(PENN_LABELS) else f"L{i}" for i in range(n_labels)]
    arities = np.clip(rng.poisson(mean_nonterminals, size=n_rules), 0, max_nonterminals)
    label_draws = zipf_choice(rng, n_labels, int(arities.sum()) + n_rules)
    source_words = zipf_choice(rng, source_vocab, n_rules * 8)
    target_words = zipf_choice(rng, target_vocab, n_rules * 8)
    # One string per word, shared by the rules that use it, as read_rules (which interns) gives them.
    source_spellings = [f"s{w}" for w in range(source_vocab)]
    target_spellings = [f"t{w}" for w in range(target_vocab)]
    order_kind = rng.random(n_rules)
    uniforms = rng.random((n_rules, 4))
    scores = rng.uniform(0.01, 1.0, size=(n_rules, n_features)).round(4)
    label_pos = word_pos = target_pos = 0
    rules: list[Rule] = []
    for i in range(n_rules):
        k = int(arities[i])
        rule_labels = tuple(labels[j] for j in label_draws[label_pos:label_pos + k])
        label_pos += k
        lhs = labels[label_draws[label_pos]]
        label_pos += 1
        # Source side: slots in order with terminals between them (at least one symbol).
        source: list = []
        for slot in range(k + 1):
            if rng.random() < terminal_probability or (k == 0 and not source):
                run = 1 + int(uniforms[i, 0] > 0.7)
                source.extend(source_spellings[w] for w in source_words[word_pos:word_pos + run])
                word_pos += run
            if slot < k:
                source.append(slot)
        if order_kind[i] < monotone:
            order = list(range(k))
        elif order_kind[i] < monotone + inverted:
            order = list(range(k))[::-1]
        else:
            order = list(rng.permutation(k))
        target: list = []
        for position, slot in enumerate(order + [None]):
            if rng.random() < terminal_probability or (k == 0 and not target):
                target.append(target_spellings[target_words[target_pos]])
                target_pos += 1
            if slot is not None:
                target.append(int(slot))
        if word_pos > len(source_words) - 16:
            word_pos = 0
        if target_pos > len(target_words) - 16:
            target_pos = 0
        rules.append(Rule(lhs, tuple(source), tuple(target), rule_labels, tuple(float(s) for s in scores[i])))
    return rules
