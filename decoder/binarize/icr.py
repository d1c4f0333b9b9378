"""Grammar cost and iterative cost reduction (Xiao, Li, Zhang, Zhu, Zhou 2009).

Binary rules are put in buckets by the source sub-sequence L(v) they cover
(labels and words of the source rule's tokens). The cost of a binary grammar is
Q(G') = sum of squared bucket sizes (Eq. 4), counting one binary rule per node
of each source rule's binarization (the multiset the paper's algorithm
maintains).

ICR starts from the left-heavy binarization and sweeps over the rules: remove
the rule's nodes from the buckets, find its cheapest binarization with the CKY
binarizer (Section 3.3; a node's cost is its bucket's current size), put the
nodes back. A new binarization is taken only if it lowers Q exactly (the CKY
cost ignores the cross term when one rule puts two nodes in one bucket), so Q
never increases. Sweeps repeat until Q stops decreasing or `max_iterations`.

The per-rule tables are flat integer arrays, so the sweep runs in compiled code
(`decoder._ext._icr.icr_sweep`); `icr_sweep_reference` is the pure-Python
twin the tests compare it with.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._ext import compiled_module

_icr = compiled_module("_icr")

NO_BUCKET = -1


def grammar_cost(bucket_keys) -> tuple[int, Counter]:
    """Q(G') and the bucket sizes, from each source rule's node bucket keys."""
    sizes = Counter()
    for keys in bucket_keys:
        sizes.update(keys)
    cost = sum(s * s for s in sizes.values())
    return cost, sizes


def bucket_size_histogram(sizes: Counter) -> dict[str, int]:
    """How many buckets have each size (JSON-friendly: sizes as strings, ascending)."""
    histogram = Counter(sizes.values())
    return {str(size): histogram[size] for size in sorted(histogram)}


@dataclass
class SpanTables:
    """Flat per-rule tables for the CKY binarizer.

    For rule i with n = n_tokens[i] tokens, span_bucket[table_offsets[i] + p*n + q]
    is the bucket id of tokens p..q if that span is feasible (derivable and
    target-contiguous), else NO_BUCKET. tree_spans[tree_offsets[i]:tree_offsets[i+1]]
    holds the codes p*n + q of the current tree's internal nodes (n - 1 of them).
    `active[i]` is 0 for rules ICR must not change (one token, or monolingual
    because not binarizable).
    """

    n_tokens: np.ndarray  # int32
    table_offsets: np.ndarray  # int64, len = rules + 1
    span_bucket: np.ndarray  # int32
    tree_offsets: np.ndarray  # int64, len = rules + 1
    tree_spans: np.ndarray  # int32
    active: np.ndarray  # uint8
    counts: np.ndarray  # int64, bucket sizes
    # What the compiled sweep remembers between sweeps (icr_sweep): a clock that ticks once per
    # rule visited, per bucket the time its size last changed, per rule the time it was last
    # evaluated. A rule none of whose feasible buckets changed since is not evaluated again: its
    # CKY would see the same sizes and make the same choice.
    clock: np.ndarray = None  # int64[1]
    bucket_changed: np.ndarray = None  # int64, per bucket
    rule_checked: np.ndarray = None  # int64, per rule

    def __post_init__(self):
        if self.clock is None:
            self.clock = np.zeros(1, dtype=np.int64)
            self.bucket_changed = np.zeros(len(self.counts), dtype=np.int64)
            self.rule_checked = np.zeros(len(self.n_tokens), dtype=np.int64)


def cost_of(counts: np.ndarray) -> int:
    return int(np.dot(counts, counts))


def cky_binarize_reference(n: int, bucket_of, counts) -> tuple[int, list[tuple[int, int]]]:
    """The cheapest bracketing of n tokens: sum over its nodes of counts[bucket].

    bucket_of(p, q) gives the bucket id of span p..q or NO_BUCKET if infeasible.
    Returns (cost, internal spans in post-order). Ties go to the smallest split point.
    """
    inf = float("inf")
    best = [[inf] * n for _ in range(n)]
    split = [[-1] * n for _ in range(n)]
    for t in range(n):
        best[t][t] = 0
    for length in range(2, n + 1):
        for p in range(0, n - length + 1):
            q = p + length - 1
            b = bucket_of(p, q)
            if b == NO_BUCKET:
                continue
            for k in range(p, q):
                c = best[p][k] + best[k + 1][q]
                if c < best[p][q]:
                    best[p][q] = c
                    split[p][q] = k
            if split[p][q] >= 0:
                best[p][q] += counts[b]
    spans: list[tuple[int, int]] = []

    def collect(p: int, q: int) -> None:
        if p == q:
            return
        k = split[p][q]
        collect(p, k)
        collect(k + 1, q)
        spans.append((p, q))

    if best[0][n - 1] == inf:
        raise ValueError("no feasible bracketing")
    collect(0, n - 1)
    return best[0][n - 1], spans


def exact_increase(buckets, counts) -> int:
    """How much Q grows when these node buckets are added to `counts` (one rule's nodes)."""
    added = Counter(buckets)
    return sum(2 * k * counts[b] + k * k for b, k in added.items())


def icr_sweep_reference(tables: SpanTables) -> int:
    """One ICR sweep over all rules, in place; returns how many rules changed binarization."""
    changed = 0
    counts = tables.counts
    for i in range(len(tables.n_tokens)):
        if not tables.active[i]:
            continue
        n = int(tables.n_tokens[i])
        base = int(tables.table_offsets[i])
        lo, hi = int(tables.tree_offsets[i]), int(tables.tree_offsets[i + 1])
        old_codes = [int(c) for c in tables.tree_spans[lo:hi]]
        old_buckets = [int(tables.span_bucket[base + c]) for c in old_codes]
        for b in old_buckets:
            counts[b] -= 1

        def bucket_of(p, q, base=base, n=n):
            return int(tables.span_bucket[base + p * n + q])

        _, spans = cky_binarize_reference(n, bucket_of, counts)
        new_codes = [p * n + q for p, q in spans]
        new_buckets = [int(tables.span_bucket[base + c]) for c in new_codes]
        if sorted(new_codes) != sorted(old_codes) and \
                exact_increase(new_buckets, counts) < exact_increase(old_buckets, counts):
            tables.tree_spans[lo:hi] = new_codes
            changed += 1
            keep = new_buckets
        else:
            keep = old_buckets
        for b in keep:
            counts[b] += 1
    return changed


def icr_sweep(tables: SpanTables) -> int:
    """One ICR sweep in compiled code (same result as icr_sweep_reference; the rules whose
    feasible buckets kept their sizes since their last evaluation are skipped: SpanTables.clock)."""
    return _icr.icr_sweep(tables.n_tokens, tables.table_offsets, tables.span_bucket,
                          tables.tree_offsets, tables.tree_spans, tables.active, tables.counts,
                          tables.clock, tables.bucket_changed, tables.rule_checked)
