"""Weight pushing onto the binarization's virtual symbols (the experimental setting `weight_pushing`, on).

    rule_score = pushed_rule_scores(store, rule_score, kept)

In the binarized store a source rule's score sits on its top rule; the virtual rules that build
its pieces score only their words' word-count weight. A virtual item therefore looks better than any
derivation through it can end up, and in a cell's cube pruning the virtual items take most of the
pops (most of them, on the Bible demo at pop limit 100), where Moses, parsing
unbinarized rules, spends every pop on a complete rule application.

Pushing gives each virtual symbol v the best score `best(v)` among the kept rules that use v as a
child (for a virtual parent: that parent's own best, so the value climbs chains of virtual
symbols), each rule's score counted with the weighted LM estimate of its own target words (as Moses
estimates a target phrase): the rule score holds the word-count bonus of those words but not their
LM cost, so without the estimate best(v) is the completion with the most words, and under a large
word bonus every virtual item looks far better than it can end up, takes a cell's pops from the real
items, and the search falls back on glue. Pushing adds best(v) to every rule whose lhs is v and
subtracts it from every rule with v as a child.
Each virtual item of a complete derivation is made by exactly one rule and used by exactly one, so
every complete derivation (and every real item) scores exactly as before: the model, exhaustive
search and k-best lists are unchanged; only the order in which pruning meets items changes. This is
the weight pushing of binarized synchronous grammars (as in DeNero et al. 2009's treatment of
binarized SCFG scores): a virtual item now carries an estimate of the rest of its rule.
"""
from __future__ import annotations

import numpy as np

# Chains of virtual symbols are as long as the longest binarized rule; this bounds the passes that
# carry best(v) down them (any values keep complete derivations' scores, so stopping early is safe).
MAX_CHAIN_PASSES = 64


def pushed_rule_scores(store, rule_score: np.ndarray, kept: np.ndarray,
                       estimate: np.ndarray | None = None) -> np.ndarray:
    """`rule_score` (float64[R], weights . features + word-count weight * words) with each virtual
    symbol's best completion score pushed from the rules that use it onto the rules that make it;
    `kept` (bool[R]) is the table limit's rules: only they set best(v). `estimate` (float64[R], the
    weighted LM estimate of each rule's own target words; NaN: none) is added to the completions
    that best(v) is taken over, so that it is not the score of the rule with the most words: the word
    bonus of a completion's words is in rule_score, their LM cost only in `estimate`."""
    n_nt = store.n_nonterminals
    lhs = np.asarray(store.rule_lhs, dtype=np.int64)
    children = (np.asarray(store.rule_child0, dtype=np.int64), np.asarray(store.rule_child1, dtype=np.int64))
    symbol_is_virtual = np.zeros(n_nt + 1, dtype=bool)  # + 1: a slot for every id out of range
    symbol_is_virtual[:n_nt] = np.asarray(store.symbol_is_virtual, dtype=bool)

    def virtual(symbols: np.ndarray) -> np.ndarray:
        return symbol_is_virtual[np.where((symbols >= 0) & (symbols < n_nt), symbols, n_nt)]

    completion = np.asarray(rule_score, dtype=np.float64)
    if estimate is not None:
        completion = completion + np.nan_to_num(np.asarray(estimate, dtype=np.float64), nan=0.0)
    best = np.full(n_nt + 1, -np.inf)
    makes_virtual = kept & virtual(lhs)
    for child in children:  # rules with a real lhs: their own score
        uses = kept & ~makes_virtual & virtual(child)
        np.maximum.at(best, child[uses], completion[uses])
    # Rules with a virtual lhs pass that symbol's best down to their virtual children: edges lhs -> child,
    # each pass over only the edges whose lhs changed in the pass before (the others gave all they can).
    down = [makes_virtual & virtual(child) for child in children]
    parent = np.concatenate([lhs[uses] for uses in down])
    child_of = np.concatenate([child[uses] for child, uses in zip(children, down)])
    changed = np.ones(n_nt + 1, dtype=bool)
    for _ in range(MAX_CHAIN_PASSES):
        active = changed[parent]
        if not active.any():
            break
        before = best.copy()
        np.maximum.at(best, child_of[active], best[parent[active]])
        changed = best != before
    best[~np.isfinite(best)] = 0.0  # a symbol no kept rule uses: nothing to push
    pushed = np.array(rule_score, dtype=np.float64, copy=True)
    pushed[makes_virtual] += best[lhs[makes_virtual]]
    for child in children:
        uses = kept & virtual(child)
        pushed[uses] -= best[child[uses]]
    return pushed
