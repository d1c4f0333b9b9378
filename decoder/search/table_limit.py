"""The rule-table limit: at most `table_limit` rules per source side, as Moses' `table-limit`.

    keep = table_limit_rules(store, source_scores, rule_word_count, weights[WORD_COUNT], limit=20,
                             rule_estimate=None)   # or weights[LM] * the binary rules' LM estimates
    keep.rules          # bool[R]: the binary rules the search may use
    keep.source_rules   # bool[n_source_rules]: the source rules kept

Semantics (those of Moses' rule table, whose target phrase collections are keyed
by the source side): a *source side* is the sequence of source terminals and
nonterminal labels of a source rule (`de [NP]`: the run `de`, then NP; the lhs
is not part of it, so rules with different lhs compete, as in Moses' string-to-
tree tables whose source lhs is always X). Of the source rules sharing a source
side, the `limit` best by their rule score under the decoder's weights are kept:
weights . rule features + word-count weight * target words (the part of the
model score a rule has on its own), plus, with table_limit_rank = "estimate" (not
the default), the LM weight times the LM estimate of its target words (each run of
words scored on its own, summed over the source rule's binary rules), as Moses
ranks a target phrase collection. Ties go to the earlier source rule. 0 keeps all.

In the binarized store a source rule is its top rule plus virtual rules that
other source rules may share. A binary rule is kept if it is the top rule of a
kept source rule, or a virtual rule defining a virtual symbol that some kept
source rule's binarization uses (the store keeps one defining rule per virtual
symbol, not each source rule's binarization, so every rule defining a needed
virtual symbol is kept: they all derive the same symbol over the same span).
Virtual rules that only dropped source rules used are dropped, so their items
no longer take pops from the cells they would have been built in.

When: the limit is applied when the decoder opens the store (decoder.search.
grammar_arrays), with the decoder's current weights, because tuning changes the
weights after compiling and the ranking depends on them; the store itself keeps
every rule. On the Bible demo store (852k source rules, 1.9M binary rules) this
costs about a second at open.

Source sides are compared by two independent 64-bit polynomial hashes of their
token sequences plus their length (the store keeps no source string per rule;
the hashes are built bottom-up through the virtual symbols, whose yields their
names fix). Two different source sides collide with probability about 2^-128
per pair, i.e. never in practice.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import StoreError

# Polynomial hash bases (odd, so that multiplication is invertible mod 2^64) and token salts.
_BASES = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))
_SALTS = (np.uint64(0x632BE59BD9B4E019), np.uint64(0x165667B19E3779F9))


@dataclass
class TableLimit:
    """Which rules a table limit keeps (all True when limit is 0)."""

    limit: int
    rules: np.ndarray          # bool[R]: binary rules kept
    source_rules: np.ndarray   # bool[n_source_rules]: source rules kept (False for rules the store dropped)

    def stats(self) -> dict:
        return {"table_limit": self.limit, "source_rules_kept": int(self.source_rules.sum()),
                "source_rules": int(len(self.source_rules)), "binary_rules_kept": int(self.rules.sum()),
                "binary_rules": int(len(self.rules))}


def table_limit_rules(store, source_scores: np.ndarray, rule_word_count: np.ndarray, word_count_weight: float,
                      limit: int, rule_estimate: np.ndarray | None = None) -> TableLimit:
    """The rules kept by a table limit of `limit` rules per source side (module docstring).

    source_scores: float64[n_source_rules], weights . features of each source rule;
    rule_word_count: int[R], target words of each binary rule's own target side;
    rule_estimate: float64[R] or None, a weighted estimate of each binary rule's own target words (the
    LM's, with table_limit_rank = "estimate"), summed over a source rule's binary rules into its rank."""
    n_rules = len(store)
    top = np.asarray(store.source_top_rule, dtype=np.int64)
    present = top >= 0
    if limit <= 0:
        return TableLimit(0, np.ones(n_rules, dtype=bool), present.copy())
    sides = source_sides(store, rule_word_count, rule_estimate)
    score = np.asarray(source_scores, dtype=np.float64) + word_count_weight * sides.target_words + sides.target_estimate
    candidates = np.flatnonzero(present)
    # Sorted by source side, then best score first, then source rule index (lexsort is stable and
    # the candidates ascend). hash1 alone nearly always tells the sides apart; the full key is
    # sorted on only if two sides share it.
    order = candidates[np.lexsort((-score[candidates], sides.hash1[candidates]))]
    same1 = sides.hash1[order[1:]] == sides.hash1[order[:-1]]
    if np.any(same1 & ((sides.hash2[order[1:]] != sides.hash2[order[:-1]])
                       | (sides.length[order[1:]] != sides.length[order[:-1]]))):
        order = candidates[np.lexsort((-score[candidates], sides.length[candidates], sides.hash2[candidates],
                                       sides.hash1[candidates]))]
    n = len(order)
    new_side = np.ones(n, dtype=bool)
    if n > 1:
        new_side[1:] = ((sides.hash1[order[1:]] != sides.hash1[order[:-1]])
                        | (sides.hash2[order[1:]] != sides.hash2[order[:-1]])
                        | (sides.length[order[1:]] != sides.length[order[:-1]]))
    side_start = np.maximum.accumulate(np.where(new_side, np.arange(n), 0)) if n else np.zeros(0, np.int64)
    rank = np.arange(n) - side_start
    keep_source = np.zeros(len(top), dtype=bool)
    keep_source[order[rank < limit]] = True
    return TableLimit(int(limit), binary_rules_of(store, keep_source), keep_source)


@dataclass
class SourceSides:
    """Per source rule: its source side's hashes and length (tokens), and its target words."""

    hash1: np.ndarray
    hash2: np.ndarray
    length: np.ndarray
    target_words: np.ndarray
    target_estimate: np.ndarray   # the sum of its binary rules' `rule_estimate` (zeros without one)


def source_sides(store, rule_word_count: np.ndarray, rule_estimate: np.ndarray | None = None) -> SourceSides:
    """Each source rule's source side (as hashes), target word count and the sum of `rule_estimate`
    (float[R], optional) over its binary rules, from its top rule and the virtual symbols below it
    (computed once per virtual symbol, bottom up)."""
    n_nt, n_symbols = store.n_nonterminals, store.n_symbols
    child0 = np.asarray(store.rule_child0, dtype=np.int64)
    child1 = np.asarray(store.rule_child1, dtype=np.int64)
    words = np.asarray(rule_word_count, dtype=np.int64)
    is_virtual = np.zeros(n_symbols + 1, dtype=bool)  # [n_symbols]: "no child" (-1) maps there
    is_virtual[:n_nt] = np.asarray(store.symbol_is_virtual, dtype=bool)
    # Per symbol (plus the "no child" slot): yield length, hashes, target words; tokens are the
    # real nonterminals and the runs (a run is a maximal terminal sequence, so a source side has
    # one token sequence).
    symbols = np.arange(n_symbols + 1, dtype=np.uint64)
    length = np.where(is_virtual, 0, 1).astype(np.int64)
    length[n_symbols] = 0
    hashes = [_mix(symbols + salt) for salt in _SALTS]
    for h in hashes:
        h[n_symbols] = 0
    target_words = np.zeros(n_symbols + 1, dtype=np.int64)
    estimate = np.zeros(n_symbols + 1, dtype=np.float64)
    values = np.zeros(len(words)) if rule_estimate is None else np.asarray(rule_estimate, dtype=np.float64)
    resolved = ~is_virtual
    virtual = np.flatnonzero(is_virtual)
    defining = np.asarray(store.symbol_rule, dtype=np.int64)[virtual]
    pending = np.ones(len(virtual), dtype=bool)
    while pending.any():
        v, r = virtual[pending], defining[pending]
        c0, c1 = child0[r], np.where(child1[r] < 0, n_symbols, child1[r])
        ready = resolved[c0] & resolved[c1]
        if not ready.any():
            raise StoreError(store.path, "symbol_rule.npy: the virtual symbols' defining rules form a cycle")
        v, r, c0, c1 = v[ready], r[ready], c0[ready], c1[ready]
        _combine(length, hashes, target_words, v, c0, c1)
        target_words[v] += words[r]
        estimate[v] = estimate[c0] + estimate[c1] + values[r]
        resolved[v] = True
        pending[np.flatnonzero(pending)[ready]] = False
    # Top rules: the same combination gives each source rule's whole source side.
    top = np.asarray(store.source_top_rule, dtype=np.int64)
    n_source = len(top)
    out_length = np.zeros(n_source + 0, dtype=np.int64)
    has_top = top >= 0
    t = top[has_top]
    c0, c1 = child0[t], np.where(child1[t] < 0, n_symbols, child1[t])
    side_length = length[c0] + length[c1]
    side_hashes = [h[c0] * _power(base, length[c1]) + h[c1] for h, base in zip(hashes, _BASES)]
    out_length[has_top] = side_length
    out_hashes = [np.zeros(n_source, dtype=np.uint64) for _ in hashes]
    for out, value in zip(out_hashes, side_hashes):
        out[has_top] = value
    out_words = np.zeros(n_source, dtype=np.int64)
    out_words[has_top] = target_words[c0] + target_words[c1] + words[t]
    out_estimate = np.zeros(n_source, dtype=np.float64)
    out_estimate[has_top] = estimate[c0] + estimate[c1] + values[t]
    return SourceSides(out_hashes[0], out_hashes[1], out_length, out_words, out_estimate)


def binary_rules_of(store, keep_source: np.ndarray) -> np.ndarray:
    """bool[R]: the top rules of the kept source rules and every rule defining a virtual symbol
    below one of them (closure through the virtual symbols, one level per pass)."""
    n_nt = store.n_nonterminals
    lhs = np.asarray(store.rule_lhs, dtype=np.int64)
    child0 = np.asarray(store.rule_child0, dtype=np.int64)
    child1 = np.asarray(store.rule_child1, dtype=np.int64)
    origin = np.asarray(store.rule_origin, dtype=np.int64)
    is_virtual = np.asarray(store.symbol_is_virtual, dtype=bool)
    top = np.asarray(store.source_top_rule, dtype=np.int64)
    keep = np.zeros(len(store), dtype=bool)
    keep[top[keep_source & (top >= 0)]] = True
    # The virtual rules grouped by lhs: those of symbol v are by_lhs[first[v]:first[v + 1]].
    by_lhs = np.flatnonzero(origin < 0)
    by_lhs = by_lhs[np.argsort(lhs[by_lhs], kind="stable")]
    first = np.searchsorted(lhs[by_lhs], np.arange(n_nt + 1))
    needed = np.zeros(n_nt, dtype=bool)
    slot = np.zeros(n_nt, dtype=np.int64)
    frontier = np.flatnonzero(keep)
    while len(frontier):
        children = np.concatenate([child0[frontier], child1[frontier]])
        children = children[(children >= 0) & (children < n_nt)]
        children = children[is_virtual[children] & ~needed[children]]
        # Each newly needed symbol once: of its positions, only the one whose write to `slot` won.
        slot[children] = np.arange(len(children))
        children = children[slot[children] == np.arange(len(children))]
        needed[children] = True
        counts = first[children + 1] - first[children]
        positions = np.repeat(first[children] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        frontier = by_lhs[positions]
        keep[frontier] = True
    return keep


def limit_sorted_rules(rules: np.ndarray, offsets: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rules, offsets) of a key-grouped rule array with the rules not kept left out (order kept)."""
    rules = np.asarray(rules)
    kept = keep[rules] if len(rules) else np.zeros(0, dtype=bool)
    before = np.zeros(len(rules) + 1, dtype=np.int64)
    np.cumsum(kept, out=before[1:])
    return np.ascontiguousarray(rules[kept], dtype=np.int32), before[np.asarray(offsets, dtype=np.int64)]


def _combine(length, hashes, target_words, v, c0, c1) -> None:
    """Symbol v's yield = child c0's followed by child c1's."""
    for h, base in zip(hashes, _BASES):
        h[v] = h[c0] * _power(base, length[c1]) + h[c1]
    length[v] = length[c0] + length[c1]
    target_words[v] = target_words[c0] + target_words[c1]


def _power(base: np.uint64, exponents: np.ndarray) -> np.ndarray:
    """base ** exponents mod 2^64, elementwise (exponents are yield lengths: small)."""
    exponents = np.asarray(exponents, dtype=np.int64)
    top = int(exponents.max()) if len(exponents) else 0
    table, value = [], 1
    for _ in range(top + 1):
        table.append(value)
        value = value * int(base) % (1 << 64)
    return np.array(table, dtype=np.uint64)[exponents]


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, elementwise (uint64 arithmetic wraps)."""
    x = np.asarray(x, dtype=np.uint64).copy()
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x
