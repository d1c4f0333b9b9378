"""A rule as a sequence of source tokens, and the binary rules a bracketing of it makes.

Binarization works on source *tokens*: each nonterminal slot is a token, and
each maximal run of consecutive source terminals is one token (Xiao et al.
2009, Section 3.3). A binarization is a binary bracketing of the tokens
(`Tree`: a leaf is a token index, an internal node a pair); every internal node
becomes one binary rule whose children are two tokens or nodes.

Synchronous nodes must cover nonterminals whose target ranks are consecutive:
their target side is then one contiguous block of the rule's target side, and
the decoder can LM-score it when it builds the item (Zhang et al. 2006).
Target terminals are merged greedily (Section 3.2): walking the internal nodes
in post-order, each node's block absorbs the target terminals adjacent to it
that no earlier node took. Monolingual nodes (the baseline) need not be
contiguous on the target side; their target is assembled only at the top rule,
and until then the item carries the target blocks of all its children.

Everything here depends only on the rule's *shape* (token kinds, permutation,
where target terminals sit), so templates are computed once per shape and tree
and cached: real grammars have few shapes and very many rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Union

from ..grammar import Rule

Tree = Union[int, tuple]

NO_BLOCK = -1


@dataclass(frozen=True)
class TokenSequence:
    """The source tokens of one rule."""

    slots: tuple[int, ...]  # per token: the nonterminal slot, or -1 for a terminal run
    runs: tuple[tuple[str, ...], ...]  # per token: the words of a terminal run, () for a slot
    ranks: tuple[int, ...]  # per token: target rank of the slot, or -1

    @property
    def size(self) -> int:
        return len(self.slots)


def tokenize_rule(rule: Rule) -> TokenSequence:
    slots, runs = [], []
    for symbol in rule.source:
        if isinstance(symbol, int):
            slots.append(symbol)
            runs.append(())
        elif slots and slots[-1] == -1:
            runs[-1] = runs[-1] + (symbol,)
        else:
            slots.append(-1)
            runs.append((symbol,))
    permutation = rule.permutation
    ranks = tuple(permutation[s] if s >= 0 else -1 for s in slots)
    return TokenSequence(tuple(slots), tuple(runs), ranks)


def shape_key(rule: Rule, tokens: TokenSequence) -> tuple:
    """What the templates depend on: token kinds, ranks, and the target pattern (-1 = terminal)."""
    target_pattern = tuple(s if isinstance(s, int) else -1 for s in rule.target)
    return (tokens.ranks, target_pattern)


def span_is_contiguous(ranks: tuple[int, ...], p: int, q: int) -> bool:
    """Do the nonterminals of tokens p..q (inclusive) have consecutive target ranks?"""
    values = [r for r in ranks[p:q + 1] if r >= 0]
    return not values or max(values) - min(values) == len(values) - 1


def tree_spans(tree: Tree) -> list[tuple[int, int]]:
    """Token spans (first, last) of the internal nodes, in post-order (root last)."""
    out: list[tuple[int, int]] = []

    def walk(t: Tree) -> tuple[int, int]:
        if isinstance(t, int):
            return t, t
        a, _ = walk(t[0])
        _, b = walk(t[1])
        out.append((a, b))
        return a, b

    walk(tree)
    return out


def tree_from_spans(spans, p: int, q: int) -> Tree:
    """Rebuild the bracketing of tokens p..q from its set of internal spans."""
    if p == q:
        return p
    for k in range(p, q):
        left_ok = k == p or (p, k) in spans
        right_ok = k + 1 == q or (k + 1, q) in spans
        if left_ok and right_ok:
            return (tree_from_spans(spans, p, k), tree_from_spans(spans, k + 1, q))
    raise ValueError(f"spans do not form a bracketing of {p}..{q}")


def is_synchronous_tree(tree: Tree, ranks: tuple[int, ...]) -> bool:
    return all(span_is_contiguous(ranks, p, q) for p, q in tree_spans(tree))


@dataclass(frozen=True)
class NodeTemplate:
    """One internal node of a bracketing, as a binary-rule template.

    children: per child, ("token", index) or ("node", index into the template list).
    target: items ("word", target position) or ("block", index into the children's
        carried blocks, left child's first); None for a monolingual virtual node,
        which carries its children's blocks instead.
    block: (first, last) target positions of a synchronous node's block, else None.
    carried: how many target blocks the node's item carries (1 if target is not None).
    """

    span: tuple[int, int]
    children: tuple[tuple[str, int], ...]
    target: Optional[tuple[tuple[str, int], ...]]
    block: Optional[tuple[int, int]]
    carried: int
    is_top: bool


@lru_cache(maxsize=200_000)
def node_templates(ranks: tuple[int, ...], target_pattern: tuple[int, ...], tree: Tree,
                   synchronous: bool) -> tuple[NodeTemplate, ...]:
    """Binary-rule templates for the internal nodes of `tree` (post-order, top last).

    A one-token rule (lexical, or a unary rule X -> Y) has a single template
    whose only child is the token.
    """
    n_tokens = len(ranks)
    slot_of_token = []
    slot = 0
    for r in ranks:
        slot_of_token.append(slot if r >= 0 else -1)
        slot += r >= 0
    target_pos_of_slot = {s: pos for pos, s in enumerate(target_pattern) if s >= 0}
    absorbed = [False] * len(target_pattern)
    templates: list[NodeTemplate] = []

    def carried_blocks(child: tuple[str, int]) -> int:
        kind, index = child
        if kind == "token":
            return 1 if ranks[index] >= 0 else 0
        return templates[index].carried

    def child_block(child: tuple[str, int]) -> Optional[tuple[int, int]]:
        kind, index = child
        if kind == "token":
            if ranks[index] < 0:
                return None
            pos = target_pos_of_slot[slot_of_token[index]]
            return pos, pos
        return templates[index].block

    def make(span, children, is_top) -> int:
        carried_in = [carried_blocks(c) for c in children]
        if is_top:
            # The top rule spells out the rule's whole target side; its blocks are
            # the carried blocks of its children, which hold the slots in source order
            # (monolingual) or are the children's contiguous blocks (synchronous).
            lo, hi = 0, len(target_pattern) - 1
        elif synchronous:
            blocks = [b for b in (child_block(c) for c in children) if b is not None]
            lo = min(b[0] for b in blocks)
            hi = max(b[1] for b in blocks)
            while lo > 0 and target_pattern[lo - 1] < 0 and not absorbed[lo - 1]:
                lo -= 1
            while hi + 1 < len(target_pattern) and target_pattern[hi + 1] < 0 and not absorbed[hi + 1]:
                hi += 1
        else:
            templates.append(NodeTemplate(span, tuple(children), None, None, sum(carried_in), False))
            return len(templates) - 1
        for pos in range(lo, hi + 1):
            if target_pattern[pos] < 0:
                absorbed[pos] = True
        target = _block_target(children, lo, hi, target_pattern, child_block, carried_in,
                               synchronous or not is_top, slot_of_token, ranks, templates)
        templates.append(NodeTemplate(span, tuple(children), target, (lo, hi), 1, is_top))
        return len(templates) - 1

    def walk(t: Tree, is_top: bool) -> tuple[str, int]:
        if isinstance(t, int):
            if is_top:  # one-token rule
                make((t, t), [("token", t)], True)
            return ("token", t)
        left = walk(t[0], False)
        right = walk(t[1], False)
        span = (_first_token(t), _last_token(t))
        return ("node", make(span, [left, right], is_top))

    walk(tree, True)
    assert n_tokens == 0 or templates[-1].is_top
    return tuple(templates)


def _first_token(t: Tree) -> int:
    return t if isinstance(t, int) else _first_token(t[0])


def _last_token(t: Tree) -> int:
    return t if isinstance(t, int) else _last_token(t[1])


def _block_target(children, lo, hi, target_pattern, child_block, carried_in, contiguous_children,
                  slot_of_token, ranks, templates):
    """Target items of a node covering target positions lo..hi."""
    items: list[tuple[str, int]] = []
    if contiguous_children:
        # Each child's block is contiguous: emit it once, as a reference to that child.
        block_index = {}
        offset = 0
        for child, n_carried in zip(children, carried_in):
            if n_carried:
                block_index[child_block(child)] = offset
            offset += n_carried
        pos = lo
        while pos <= hi:
            block = next((b for b in block_index if b[0] <= pos <= b[1]), None)
            if block is None:
                assert target_pattern[pos] < 0, "a nonterminal outside every child block"
                items.append(("word", pos))
                pos += 1
            else:
                items.append(("block", block_index[block]))
                pos = block[1] + 1
        return tuple(items)
    # Top of a monolingual (or mixed) bracketing: the carried blocks are the
    # slots of the rule in source order, so slot s is carried block s.
    for pos in range(lo, hi + 1):
        s = target_pattern[pos]
        items.append(("word", pos) if s < 0 else ("block", s))
    return tuple(items)
