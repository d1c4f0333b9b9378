"""Lazy k-best extraction: Huang and Chiang (2005), Algorithm 3, over the exported chart.

- `CompiledKBest`: the decoder's k-best, in C (decoder._ext._kbest), with the
  unique-output filter done there too (outputs compared as word-id sequences).
  It returns each derivation as its edges in pre-order, the form
  decoder.search.readback reads.
- `ReferenceLazyKBest` (also `LazyKBest`, its old name) and `kbest_derivations`:
  the pure-Python reference the tests compare the compiled one with (same order,
  ties included; ChartSearchDriver.kbest_reference). Its LazyKthBest recursion
  (`_fill` -> `_push_next` -> `_score_of`) is the paper's, one Python frame per
  tree level: for tiny grammars, not for 1,000-word sentences.

`kbest_derivations(finder, k, unique, ...)` yields the derivations of the sentence
best first, as (score, root index, derivation tree); with `unique`, only the best
derivation of each distinct output (compared through `edge_blocks`,
decoder.search.readback).
"""
from __future__ import annotations

import heapq

import numpy as np

from decoder._ext import compiled_module

_kbest = compiled_module("_kbest")

# Unique k-best examines at most this many derivations per output asked for (max_derivations).
DERIVATIONS_PER_UNIQUE_OUTPUT = 50


def derivation_limit(k: int, unique: bool, max_derivations: int | None = None) -> int:
    """How many derivations a k-best list examines: max_derivations if given, else k (50 * k if unique)."""
    if max_derivations is not None:
        return max_derivations
    return DERIVATIONS_PER_UNIQUE_OUTPUT * k if unique else k


class CompiledKBest:
    """The compiled lazy k-best (decoder._ext._kbest) over one grammar store's rules."""

    def __init__(self, store):
        self.store = store
        self.engine = _kbest.KBest(store.rule_carries, store.rule_target_offsets, store.rule_target)
        self._target_index: dict | None = None

    def pass_through_words(self, words) -> np.ndarray:
        """int32 per source word: its output word id when passed through. Outputs are compared as
        word-id sequences in the store's target vocabulary, so a word the vocabulary has gets its
        id there (the same output as a rule writing it); any other word an id above the
        vocabulary's, one per distinct word."""
        if self._target_index is None:
            self._target_index = {word: i for i, word in enumerate(self.store.target_vocab)}
        index, n_vocab = self._target_index, len(self._target_index)
        others: dict = {}
        return np.fromiter((index[w] if w in index else n_vocab + others.setdefault(w, len(others)) for w in words),
                           dtype=np.int32, count=len(words))

    def derivations(self, chart: dict, roots, root_extra, words, k: int, unique: bool,
                    max_derivations: int | None = None, memory_budget_mb: int = 0, memory_held: int = 0) -> list:
        """[(score, root index, edges in pre-order)] of the k best derivations (unique: of the k best
        distinct outputs, among at most `derivation_limit(...)` derivations), best first; in at most
        memory_budget_mb MB (0: no limit) with the memory_held bytes of the sentence's chart search,
        else MemoryBudgetError."""
        scores, root_index, offsets, edges = self.engine.extract(
            chart, roots, root_extra, self.pass_through_words(words), int(k), bool(unique),
            int(derivation_limit(k, unique, max_derivations)), int(memory_budget_mb), int(memory_held))
        offsets = offsets.tolist()
        return [(score, root, edges[offsets[d]:offsets[d + 1]])
                for d, (score, root) in enumerate(zip(scores.tolist(), root_index.tolist()))]


# ---------------------------------------------------------------------- the Python reference


def kbest_derivations(finder: "ReferenceLazyKBest", k: int, unique: bool, max_derivations: int | None = None):
    """Yield (score, root index, derivation tree) of the k best derivations (unique: of the k best
    distinct outputs, among at most `max_derivations` derivations, 50 * k by default), best first."""
    seen: set = set()
    found = 0
    for rank in range(derivation_limit(k, unique, max_derivations)):
        kth = finder.kth_root(rank)
        if kth is None:
            return
        score, root_index, root_rank = kth
        if unique:
            text = " ".join(finder.blocks(finder.roots[root_index], root_rank)[0])
            if text in seen:
                continue
            seen.add(text)
        yield score, root_index, finder.tree(finder.roots[root_index], root_rank)
        found += 1
        if found >= k:
            return


class ReferenceLazyKBest:
    """Huang and Chiang (2005), Algorithm 3, over the exported chart (as lists): the reference.

    A derivation of item v is (score, edge, ranks): the edge into v and, per tail,
    the rank of the tail's derivation used. The root is a virtual node whose edges
    are the GOAL items over the sentence, each with its sentence-end LM score (</s>).
    """

    def __init__(self, chart: dict, roots: list, root_extra: list, tails_of, edge_blocks):
        self.chart = chart
        self.tails_of = tails_of
        self.edge_blocks = edge_blocks
        self.derivations: dict = {}   # item -> list of (score, edge, ranks)
        self.candidates: dict = {}    # item -> heap of (-score, edge, ranks)
        self.seen: dict = {}
        self.memo_blocks: dict = {}   # (item, rank) -> target blocks
        self.root_extra = root_extra
        self.roots = roots
        self.root_derivations: list = []
        self.root_candidates = [(-(chart["item_score"][r] + root_extra[i]), i, 0) for i, r in enumerate(roots)]
        heapq.heapify(self.root_candidates)

    def _score_of(self, item: int, rank: int) -> float | None:
        if rank == 0 and item not in self.derivations:
            return self.chart["item_score"][item]
        self._fill(item, rank + 1)
        ds = self.derivations[item]
        return ds[rank][0] if rank < len(ds) else None

    def _init(self, item: int):
        chart = self.chart
        heap = []
        edge = chart["item_first_edge"][item]
        while edge >= 0:
            tails = self.tails_of(chart, edge)
            score = chart["edge_score"][edge] + sum(chart["item_score"][t] for t in tails)
            heap.append((-score, edge, (0,) * len(tails)))
            edge = chart["edge_next"][edge]
        heapq.heapify(heap)
        self.candidates[item] = heap
        self.derivations[item] = []
        self.seen[item] = {(e, r) for _, e, r in heap}

    def _fill(self, item: int, k: int):
        if item not in self.derivations:
            self._init(item)
        ds, heap = self.derivations[item], self.candidates[item]
        while len(ds) < k:
            if ds:
                _, edge, ranks = ds[-1]
                self._push_next(item, edge, ranks)
            if not heap:
                break
            neg, edge, ranks = heapq.heappop(heap)
            ds.append((-neg, edge, ranks))

    def _push_next(self, item: int, edge: int, ranks: tuple):
        tails = self.tails_of(self.chart, edge)
        for t in range(len(tails)):
            new_ranks = ranks[:t] + (ranks[t] + 1,) + ranks[t + 1:]
            if (edge, new_ranks) in self.seen[item]:
                continue
            scores = [self._score_of(tails[u], new_ranks[u]) for u in range(len(tails))]
            if any(s is None for s in scores):
                continue
            self.seen[item].add((edge, new_ranks))
            heapq.heappush(self.candidates[item], (-(self.chart["edge_score"][edge] + sum(scores)), edge, new_ranks))

    def tree(self, item: int, rank: int):
        """The derivation as (edge, [subtrees]) (each node a list [edge, subtrees])."""
        root: list = [None, []]
        stack = [(item, rank, root)]
        while stack:
            item, rank, node = stack.pop()
            self._fill(item, rank + 1)
            _, edge, ranks = self.derivations[item][rank]
            node[0] = edge
            children = [[None, []] for _ in ranks]
            node[1].extend(children)
            stack.extend(reversed(list(zip(self.tails_of(self.chart, edge), ranks, children))))
        return root

    def blocks(self, item: int, rank: int) -> tuple:
        """The target blocks of a derivation (memoized: derivations share their parts)."""
        memo = self.memo_blocks
        stack = [(item, rank, False)]
        while stack:
            node_item, node_rank, children_done = stack.pop()
            if (node_item, node_rank) in memo:
                continue
            self._fill(node_item, node_rank + 1)
            _, edge, ranks = self.derivations[node_item][node_rank]
            tails = self.tails_of(self.chart, edge)
            if children_done:
                memo[node_item, node_rank] = self.edge_blocks(edge, [memo[t, r] for t, r in zip(tails, ranks)])
            else:
                stack.append((node_item, node_rank, True))
                stack.extend((t, r, False) for t, r in zip(tails, ranks))
        return memo[item, rank]

    def kth_root(self, k: int):
        """(score, root index, rank of the root item's derivation) of the k-th best derivation, or None."""
        while len(self.root_derivations) <= k:
            if self.root_derivations:
                _, index, rank = self.root_derivations[-1]
                next_score = self._score_of(self.roots[index], rank + 1)
                if next_score is not None:
                    heapq.heappush(self.root_candidates, (-(next_score + self.root_extra[index]), index, rank + 1))
            if not self.root_candidates:
                return None
            neg, index, rank = heapq.heappop(self.root_candidates)
            self.root_derivations.append((-neg, index, rank))
        return self.root_derivations[k]


LazyKBest = ReferenceLazyKBest  # the old name
