"""Grammar induction by hierarchical tree partitioning (Ding and Palmer 2005, section 3).

For each tree pair, for each category set C of CATEGORY_SEQUENCE in turn:

  a) among the word pairs (e_i, f_j) of one current tree pair (a piece of the partition),
     neither "chosen" (a piece's two roots count as chosen) and both of a category in C,
     take the best by the scorer (the max-ent interpolation of the heuristics), if its
     probability reaches `threshold`;
  b) cut the subtrees of e_i and f_j (inside the current piece) off as a new piece pair,
     mark both chosen, and go back to (a); otherwise go to the next category set.

After each category set, every piece pair of the current partition is collected (each
distinct piece pair once per sentence pair), so the grammar holds the ETs of every level
of the hierarchy: big ETs from the early levels, small ones from the late. Root-word
transitions P(child ET root | parent ET root) are counted on the English side of the final
partition ("<root>" is the parent of the ET holding the sentence root).

The paper's category sequence begins with the top NP chunks; ours is CATEGORY_SEQUENCE
(ties between equally scored pairs go to the shallower English word, so top NPs first).
Broken and crossing dependencies are absorbed inside a piece pair: a cut only moves
whole subtrees.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from .deptree import DepTree
from .elementary import et_key
from .grammar import MAX_ET_WORDS, plausible_sizes
from .heuristics import MaxEntScorer, PairContext

CATEGORY_SEQUENCE: tuple[tuple[str, ...], ...] = (("NP",), ("VP",), ("PP", "ADJP", "ADVP"), ("O",))
ROOT = "<root>"


class PairScorer(Protocol):
    def __call__(self, context: PairContext, pairs: list[tuple[int, int]],
                 e_piece: np.ndarray, f_piece: np.ndarray) -> np.ndarray: ...


def maxent_pair_scorer(model: MaxEntScorer) -> PairScorer:
    def score(context, pairs, e_piece, f_piece):
        return model.probability(context.feature_matrix(pairs, e_piece, f_piece))
    return score


def alignment_pair_scorer(links: set[tuple[int, int]]) -> PairScorer:
    """1 for pairs the alignment links ((f, e) pairs), else 0: an oracle for tests."""
    def score(context, pairs, e_piece, f_piece):
        return np.array([1.0 if (j, i) in links else 0.0 for i, j in pairs])
    return score


@dataclass
class Piece:
    e: np.ndarray           # English positions of the piece (bool mask)
    f: np.ndarray
    e_root: int
    f_root: int


@dataclass
class Partition:
    """The result for one tree pair: the piece pairs of every level, the final partition,
    and the splits made per category set."""
    levels: list[list[Piece]] = field(default_factory=list)
    splits: list[int] = field(default_factory=list)

    @property
    def final(self) -> list[Piece]:
        return self.levels[-1]


def _depth(tree: DepTree, node: int) -> int:
    depth = 0
    while tree.heads[node] != -1:
        node = tree.heads[node]
        depth += 1
    return depth


def partition(context: PairContext, scorer: PairScorer, threshold: float = 0.5,
              categories: tuple[tuple[str, ...], ...] = CATEGORY_SEQUENCE) -> Partition:
    e_tree, f_tree = context.e_tree, context.f_tree
    result = Partition()
    if not len(e_tree) or not len(f_tree):
        return result
    pieces = [Piece(np.ones(len(e_tree), bool), np.ones(len(f_tree), bool), e_tree.root, f_tree.root)]
    chosen_e, chosen_f = {e_tree.root}, {f_tree.root}
    e_depth = [_depth(e_tree, i) for i in range(len(e_tree))]
    for category_set in categories:
        splits = 0
        while True:
            best = None   # (probability, -depth, piece index, i, j)
            for index, piece in enumerate(pieces):
                es = [i for i in np.flatnonzero(piece.e).tolist()
                      if i not in chosen_e and e_tree.categories[i] in category_set]
                fs = [j for j in np.flatnonzero(piece.f).tolist()
                      if j not in chosen_f and f_tree.categories[j] in category_set]
                pairs = [(i, j) for i in es for j in fs]
                if not pairs:
                    continue
                scores = scorer(context, pairs, piece.e, piece.f)
                for (i, j), p in zip(pairs, scores.tolist()):
                    candidate = (p, -e_depth[i], -i, -j, index)
                    if p >= threshold and (best is None or candidate > best):
                        best = candidate
            if best is None:
                break
            _, _, minus_i, minus_j, index = best
            i, j = -minus_i, -minus_j
            piece = pieces[index]
            e_cut = context.e_sub[i] & piece.e
            f_cut = context.f_sub[j] & piece.f
            pieces[index] = Piece(piece.e & ~e_cut, piece.f & ~f_cut, piece.e_root, piece.f_root)
            pieces.append(Piece(e_cut, f_cut, i, j))
            chosen_e.add(i)
            chosen_f.add(j)
            splits += 1
        result.splits.append(splits)
        result.levels.append(list(pieces))
    return result


@dataclass
class InductionCounts:
    pairs: Counter = field(default_factory=Counter)          # (f_key, e_key) -> count
    transitions: Counter = field(default_factory=Counter)    # (parent root word, child root word) -> count
    # (Spanish relation of a child ET's root, its side of the parent ET's root: "L"/"R") -> Counter of
    # the English side ("L"/"R"), over the final partition: the data of the child order model
    orders: dict = field(default_factory=dict)
    splits_per_level: list[int] = field(default_factory=lambda: [0] * len(CATEGORY_SEQUENCE))
    new_pieces_per_level: list[int] = field(default_factory=lambda: [0] * len(CATEGORY_SEQUENCE))
    sentences: int = 0
    seconds: float = 0.0

    def add(self, context: PairContext, found: Partition, max_source_words: int) -> None:
        e_tree, f_tree = context.e_tree, context.f_tree
        self.sentences += 1
        seen = set()
        for level, pieces in enumerate(found.levels):
            self.splits_per_level[level] += found.splits[level]
            for piece in pieces:
                identity = (piece.e.tobytes(), piece.f.tobytes())
                if identity in seen:
                    continue
                seen.add(identity)
                self.new_pieces_per_level[level] += 1
                f_nodes = np.flatnonzero(piece.f).tolist()
                e_nodes = np.flatnonzero(piece.e).tolist()
                if not plausible_sizes(len(f_nodes), len(e_nodes), max_source_words):
                    continue
                self.pairs[et_key(f_tree, f_nodes), et_key(e_tree, e_nodes)] += 1
        if found.levels:
            final = found.final
            owner = np.empty(len(e_tree), dtype=int)
            for index, piece in enumerate(final):
                owner[piece.e] = index
            for piece in final:
                head = e_tree.heads[piece.e_root]
                parent = ROOT if head == -1 else e_tree.words[final[owner[head]].e_root]
                self.transitions[parent, e_tree.words[piece.e_root]] += 1
            f_owner = np.empty(len(f_tree), dtype=int)
            for index, piece in enumerate(final):
                f_owner[piece.f] = index
            for piece in final:
                head = f_tree.heads[piece.f_root]
                if head == -1:
                    continue
                parent = final[f_owner[head]]
                source_side = "L" if piece.f_root < parent.f_root else "R"
                target_side = "L" if piece.e_root < parent.e_root else "R"
                key = (f_tree.relations[piece.f_root], source_side)
                self.orders.setdefault(key, Counter())[target_side] += 1


def induce(e_trees: list[DepTree], f_trees: list[DepTree], contexts: Callable[[int], PairContext],
           scorer_for: Callable[[int], PairScorer], threshold: float = 0.5, max_source_words: int = MAX_ET_WORDS,
           progress=None) -> InductionCounts:
    """Partition every tree pair; `contexts(k)` and `scorer_for(k)` give the k-th pair's."""
    counts = InductionCounts()
    started = time.perf_counter()
    for k in range(len(e_trees)):
        context = contexts(k)
        counts.add(context, partition(context, scorer_for(k), threshold), max_source_words)
        if progress is not None:
            progress(k)
    counts.seconds = time.perf_counter() - started
    return counts
