"""Binarizability of nonterminal permutations (Zhang, Huang, Gildea, Knight 2006).

A permutation is given as a sequence of target ranks in source order: (2,3,5,4)
or 0-based (1,2,4,3). A binarization tree is a nested pair structure over the
positions of that sequence: a leaf is a position (int), an internal node a pair
(left, right). Straight and inverted nodes are not stored: they follow from the
values (an internal node is inverted when its right part has the lower values).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence, Union

Tree = Union[int, tuple]


def left_heavy_tree(values: Sequence[int]) -> Tree | None:
    """Algorithm 1 of Zhang et al. 2006: linear-time shift-reduce.

    Scans left to right keeping a stack of (min, max, tree) for contiguous runs
    of values; after each shift, reduces the top two while their value ranges
    are adjacent. Returns the unique left-heavy binarization tree, or None when
    the sequence is not binarizable. `values` must be distinct integers forming
    a consecutive range (a permuted sequence).
    """
    stack: list[tuple[int, int, Tree]] = []
    for position, value in enumerate(values):
        stack.append((value, value, position))
        while len(stack) >= 2:
            lo2, hi2, t2 = stack[-1]
            lo1, hi1, t1 = stack[-2]
            if hi1 + 1 == lo2 or hi2 + 1 == lo1:
                stack[-2:] = [(min(lo1, lo2), max(hi1, hi2), (t1, t2))]
            else:
                break
    if len(stack) != 1:
        return None
    return stack[0][2]


def is_binarizable(values: Sequence[int]) -> bool:
    return len(values) == 0 or left_heavy_tree(values) is not None


def brute_force_binarizable(values: Sequence[int]) -> bool:
    """The recursive definition of Section 2.1, checked over every split (exponential-free
    thanks to memoization over sub-spans, but independent of the shift-reduce algorithm)."""
    values = tuple(values)

    @lru_cache(maxsize=None)
    def ok(p: int, q: int) -> bool:  # values[p:q] binarizable
        span = values[p:q]
        if max(span) - min(span) != q - p - 1:
            return False  # not a permuted sequence
        if q - p == 1:
            return True
        return any(ok(p, k) and ok(k, q) for k in range(p + 1, q))

    return len(values) == 0 or ok(0, len(values))


def all_binarization_trees(values: Sequence[int]) -> list[Tree]:
    """Every binarization pattern (binary bracketing whose every constituent is a permuted sequence)."""
    values = tuple(values)

    @lru_cache(maxsize=None)
    def trees(p: int, q: int) -> tuple:
        span = values[p:q]
        if max(span) - min(span) != q - p - 1:
            return ()
        if q - p == 1:
            return (p,)
        out = []
        for k in range(p + 1, q):
            for left in trees(p, k):
                for right in trees(k, q):
                    out.append((left, right))
        return tuple(out)

    return list(trees(0, len(values))) if values else []


def format_tree(tree: Tree, values: Sequence[int]) -> str:
    """ITG notation: [a, b] straight, <a, b> inverted; leaves print their value."""

    def lo(t: Tree) -> int:
        return values[t] if isinstance(t, int) else lo(t[0]) if lo(t[0]) < lo(t[1]) else lo(t[1])

    def fmt(t: Tree) -> str:
        if isinstance(t, int):
            return str(values[t])
        left, right = t
        if lo(left) < lo(right):
            return f"[{fmt(left)}, {fmt(right)}]"
        return f"<{fmt(left)}, {fmt(right)}>"

    return fmt(tree)
