"""How each strategy brackets a rule's source tokens (see rule_shape for tokens and trees).

- monolingual: left to right over the source tokens, ignoring the target side
  (the baseline of Zhang et al. 2006).
- left: Zhang et al. 2006, Algorithm 1 on the permutation (left-heavy), then the
  source terminal runs attached at the leaves in post-order: each nonterminal
  leaf takes the unattached run on its left, then the one on its right.
- right: the mirror image of `left` (right-heavy tree, runs attached to the
  leaf on their right first).
- random: Xiao et al. 2009, Section 4.2: a uniformly random feasible split,
  top-down, in the rule's CKY binarization forest.
- icr: the forest's cheapest tree under the current bucket costs (see icr.py).
"""
from __future__ import annotations

import random
from functools import lru_cache

from .permutation import left_heavy_tree
from .rule_shape import Tree, span_is_contiguous

SYNCHRONOUS = ("left", "right", "random", "icr")
STRATEGIES = ("monolingual",) + SYNCHRONOUS
NON_BINARIZABLE_POLICIES = ("monolingual", "drop")


def check_arguments(strategy: str, non_binarizable: str) -> None:
    """A clear error for an unknown strategy or non-binarizable policy."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown binarization strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    if non_binarizable not in NON_BINARIZABLE_POLICIES:
        raise ValueError(f"unknown non-binarizable policy {non_binarizable!r}")


def monolingual_tree(n_tokens: int) -> Tree:
    tree: Tree = 0
    for t in range(1, n_tokens):
        tree = (tree, t)
    return tree


@lru_cache(maxsize=100_000)
def left_tree(ranks: tuple[int, ...]) -> Tree | None:
    """Left-heavy synchronous bracketing of the tokens, or None if not binarizable."""
    nt_tokens = [t for t, r in enumerate(ranks) if r >= 0]
    if not nt_tokens:
        return 0  # a lexical rule is one token
    skeleton = left_heavy_tree([ranks[t] for t in nt_tokens])
    if skeleton is None:
        return None
    attached = set()

    def leaf(token: int) -> Tree:
        tree: Tree = token
        if token - 1 >= 0 and ranks[token - 1] < 0 and token - 1 not in attached:
            attached.add(token - 1)
            tree = (token - 1, tree)
        if token + 1 < len(ranks) and ranks[token + 1] < 0 and token + 1 not in attached:
            attached.add(token + 1)
            tree = (tree, token + 1)
        return tree

    def decorate(t) -> Tree:  # post-order: leaves left to right
        if isinstance(t, int):
            return leaf(nt_tokens[t])
        left = decorate(t[0])
        return (left, decorate(t[1]))

    return decorate(skeleton)


@lru_cache(maxsize=100_000)
def right_tree(ranks: tuple[int, ...]) -> Tree | None:
    n = len(ranks)
    mirrored = left_tree(tuple(reversed(ranks)))
    if mirrored is None:
        return None

    def unmirror(t: Tree) -> Tree:
        if isinstance(t, int):
            return n - 1 - t
        return (unmirror(t[1]), unmirror(t[0]))

    return unmirror(mirrored)


@lru_cache(maxsize=100_000)
def feasible_spans(ranks: tuple[int, ...]) -> frozenset:
    """Token spans (p, q), p < q, that some synchronous bracketing of the rule contains.

    A span is derivable when it is contiguous on the target side and splits into
    two derivable parts (a single token is derivable).
    """
    n = len(ranks)
    derivable = {(t, t) for t in range(n)}
    for length in range(2, n + 1):
        for p in range(0, n - length + 1):
            q = p + length - 1
            if not span_is_contiguous(ranks, p, q):
                continue
            if any((p, k) in derivable and (k + 1, q) in derivable for k in range(p, q)):
                derivable.add((p, q))
    return frozenset(s for s in derivable if s[0] < s[1])


def splits(ranks: tuple[int, ...], p: int, q: int, feasible: frozenset) -> list[int]:
    """Split points k of span p..q into derivable p..k and k+1..q."""
    return [k for k in range(p, q)
            if (k == p or (p, k) in feasible) and (k + 1 == q or (k + 1, q) in feasible)]


def random_tree(ranks: tuple[int, ...], rng: random.Random) -> Tree | None:
    n = len(ranks)
    if n == 1:
        return 0
    feasible = feasible_spans(ranks)
    if (0, n - 1) not in feasible:
        return None

    def build(p: int, q: int) -> Tree:
        if p == q:
            return p
        k = rng.choice(splits(ranks, p, q, feasible))
        return (build(p, k), build(k + 1, q))

    return build(0, n - 1)
