"""Lazy k-best extraction: Huang and Chiang (2005), Algorithm 3, over the exported chart.

`kbest_derivations(chart, roots, root_extra, ...)` yields the derivations of the
sentence best first, as (score, root index, derivation tree); with `unique`, only
the best derivation of each distinct output (compared through `edge_blocks`,
decoder.search.readback).
"""
from __future__ import annotations

import heapq


def kbest_derivations(finder: "LazyKBest", k: int, unique: bool, max_derivations: int | None = None):
    """Yield (score, root index, derivation tree) of the k best derivations (unique: of the k best
    distinct outputs, among at most `max_derivations` derivations, 50 * k by default), best first."""
    seen: set = set()
    found = 0
    limit = max_derivations if max_derivations is not None else (50 * k if unique else k)
    for rank in range(limit):
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


class LazyKBest:
    """Huang and Chiang (2005), Algorithm 3, over the exported chart (as lists).

    A derivation of item v is (score, edge, ranks): the edge into v and, per tail,
    the rank of the tail's derivation used. The root is a virtual node whose edges
    are the GOAL items over the sentence, each with its sentence-boundary LM score.
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
        """The derivation as (edge, [subtrees])."""
        self._fill(item, rank + 1)
        _, edge, ranks = self.derivations[item][rank]
        tails = self.tails_of(self.chart, edge)
        return (edge, [self.tree(t, r) for t, r in zip(tails, ranks)])

    def blocks(self, item: int, rank: int) -> tuple:
        """The target blocks of a derivation (memoized: derivations share their parts)."""
        key = (item, rank)
        cached = self.memo_blocks.get(key)
        if cached is None:
            self._fill(item, rank + 1)
            _, edge, ranks = self.derivations[item][rank]
            tails = self.tails_of(self.chart, edge)
            cached = self.edge_blocks(edge, [self.blocks(t, r) for t, r in zip(tails, ranks)])
            self.memo_blocks[key] = cached
        return cached

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
