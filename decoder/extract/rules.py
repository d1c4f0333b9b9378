"""Minimal and composed GHKM rules of one sentence pair.

Minimal rules (Galley et al. 2004). The minimal rule at a frontier node n is
the tree fragment from n down to its nearest frontier descendants, which
become nonterminal slots labelled with their category. Its target side is the
fragment's frontier read left to right; its source side is the source
substring covered by the closure of span(n), with each slot's substring
replaced by the slot. Target words that are unaligned are inside no span, so
their preterminals are never frontier nodes: they stay inside the fragment
of the lowest frontier node above them.

Unaligned source words (documented policy). An unaligned source word goes to
the rule of the lowest frontier node whose closure contains it; a word before
the first or after the last aligned word goes to the root's rule (the root's
closure is widened to the whole sentence). This is GHKM's highest attachment
(the highest frontier node that can take the word without its closure
crossing another node's span) and the same choice as Moses' extract-ghkm,
which attaches the word to the lowest common ancestor of the target words
aligned to its nearest aligned neighbours, or to the root at the sentence
edges. Each sentence pair so has exactly one minimal derivation, and every
rule occurrence counts 1.

Composed rules (Galley et al. 2006). A composed rule joins the minimal rule
at n with rules (minimal or composed) rooted at some of its slots. They are
bounded by `Limits`: at most `compose` minimal rules, at most
`max_nonterminals` slots and `max_symbols` symbols on the source side, and a
tree fragment at most `max_depth` deep, with Moses' definition of depth (a
slot, a word or a preterminal has depth 0; any other node one more than its
deepest child). Minimal rules are always kept, whatever their size, so every
training pair keeps its derivation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple, Union

from ..grammar import Rule
from .alignment import AlignmentGraph

Symbol = Union[str, int]


@dataclass(frozen=True)
class Limits:
    """Bounds on composed rules (minimal rules are never bounded)."""

    compose: int = 3  # most minimal rules in one composed rule; 1 = minimal rules only
    max_nonterminals: int = 5  # slots on the source side
    max_symbols: int = 7  # words + slots on the source side
    max_depth: int = 3  # depth of the target tree fragment (Moses' definition)


class ExtractedRule(NamedTuple):
    """One rule occurrence, in the slot convention of `decoder.grammar.Rule`."""

    lhs: str
    source: tuple[Symbol, ...]  # words and slots 0..k-1 in source order
    target: tuple[Symbol, ...]  # words and slots
    labels: tuple[str, ...]  # category of each slot
    alignment: tuple[tuple[int, int], ...]  # word links (source pos, target pos) inside the rule
    tree: str  # target tree fragment, Moses style: [NP [DT the] [NN]]
    size: int  # minimal rules it is made of (1 = minimal)

    def to_rule(self, scores: tuple[float, ...] = (), counts: tuple[float, ...] = ()) -> Rule:
        return Rule(self.lhs, self.source, self.target, self.labels, scores, self.alignment,
                    counts, self.tree)

    @property
    def n_nonterminals(self) -> int:
        return len(self.labels)

    def source_terminals(self) -> list[str]:
        return [s for s in self.source if isinstance(s, str)]

    def target_terminals(self) -> list[str]:
        return [s for s in self.target if isinstance(s, str)]

    def __str__(self) -> str:
        """The paper's notation, e.g. VP(AUX(does) RB(not) x0:VB) <- ne x0 pas."""
        slots = iter(s for s in self.target if isinstance(s, int))
        out = []
        for tok in _FRAGMENT_TOKEN.findall(self.tree):
            if tok == "]":
                out.append(")")
            elif tok.startswith("[") and tok.endswith("]"):
                out.append(f"x{next(slots)}:{tok[1:-1]}")
            elif tok.startswith("["):
                out.append(tok[1:] + "(")
            else:
                out.append(tok)
        lhs_side = " ".join(out).replace("( ", "(").replace(" )", ")")
        return f"{lhs_side} <- " + " ".join(s if isinstance(s, str) else f"x{s}" for s in self.source)


_FRAGMENT_TOKEN = re.compile(r"\[[^\[\]\s]+\]|\[[^\[\]\s]+|\]|[^\s\[\]]+")


class _Minimal(NamedTuple):
    """What composition needs to know about the minimal rule at a frontier node."""

    slots: tuple[int, ...]  # frontier nodes cut off, in target order
    slot_distance: tuple[int, ...]  # their distance from the fragment root
    n_symbols: int  # source side length
    depth: int


class _Fragment(NamedTuple):
    """A (possibly composed) rule rooted at a node, by the slots it expands."""

    expanded: tuple[int, ...]  # frontier nodes below the root that are not cut
    size: int
    n_nonterminals: int
    n_symbols: int
    depth: int


def extract_rules(graph: AlignmentGraph, limits: Limits = Limits()) -> list[ExtractedRule]:
    """All minimal rules of the pair, then its composed rules within `limits`."""
    frontier_nodes = graph.frontier_nodes()
    rules: list[ExtractedRule] = []
    minimal: dict[int, _Minimal] = {}
    for node in frontier_nodes:
        rule, info = _build_rule(graph, node, ())
        rules.append(rule)
        minimal[node] = info
    if limits.compose <= 1:
        return rules
    fragments: dict[int, list[_Fragment]] = {}
    for node in reversed(frontier_nodes):  # slots (descendants) first
        fragments[node] = found = _compose(minimal[node], fragments, limits)
        for fragment in found:
            if fragment.size > 1:
                rule, _ = _build_rule(graph, node, fragment.expanded)
                rules.append(rule._replace(size=fragment.size))
    return rules


def _compose(info: _Minimal, fragments: dict[int, list[_Fragment]], limits: Limits) -> list[_Fragment]:
    """The fragments rooted at a node within the limits (its minimal rule among them)."""
    n_slots = len(info.slots)
    partial = [_Fragment((), 1, n_slots, info.n_symbols, info.depth)]
    if info.n_symbols > limits.max_symbols or info.depth > limits.max_depth:
        return []  # expanding a slot never shortens the source side or the depth
    for slot, distance in zip(info.slots, info.slot_distance):
        below = fragments[slot]
        if not below:
            continue
        grown = []
        for frag in partial:
            room = limits.compose - frag.size
            if room <= 0:
                continue
            for sub in below:
                if sub.size > room:
                    continue
                n_symbols = frag.n_symbols - 1 + sub.n_symbols
                depth = max(frag.depth, distance + sub.depth)
                if n_symbols > limits.max_symbols or depth > limits.max_depth:
                    continue
                grown.append(_Fragment(frag.expanded + (slot,) + sub.expanded, frag.size + sub.size,
                                       frag.n_nonterminals - 1 + sub.n_nonterminals, n_symbols, depth))
        partial += grown
    # The slot count can still drop when a later slot is expanded by a lexical
    # rule, so it is checked only on finished fragments; a rule above can never
    # have fewer slots than a fragment inside it, so this pruning is safe.
    return [f for f in partial if f.n_nonterminals <= limits.max_nonterminals]


def _build_rule(graph: AlignmentGraph, root: int, expanded: tuple[int, ...]) -> tuple[ExtractedRule, _Minimal]:
    """The rule rooted at `root` whose fragment stops at every frontier node not in `expanded`."""
    tree = graph.tree
    labels_of = tree.label
    children = tree.children
    is_word = tree.is_word
    word_index = tree.word_index
    frontier = graph.frontier
    expanded_set = set(expanded)

    target: list = []  # words, and slot nodes (ints) for now
    target_word_at: list[int] = []  # target position -> sentence word index (-1 for slots)
    slot_nodes: list[int] = []
    slot_distance: list[int] = []

    def walk(node: int, distance: int) -> tuple[str, int]:
        """Tree fragment text and depth of the subtree at node."""
        kids = children[node]
        parts = []
        deepest = 0
        for c in kids:
            if is_word[c]:
                target.append(labels_of[c])
                target_word_at.append(word_index[c])
                parts.append(labels_of[c])
            elif frontier[c] and c not in expanded_set:
                target.append(c)
                target_word_at.append(-1)
                slot_nodes.append(c)
                slot_distance.append(distance + 1)
                parts.append(f"[{labels_of[c]}]")
            else:
                text, depth = walk(c, distance + 1)
                parts.append(text)
                if depth > deepest:
                    deepest = depth
        preterminal = len(kids) == 1 and is_word[kids[0]]
        return f"[{labels_of[node]} {' '.join(parts)}]", (0 if preterminal else deepest + 1)

    fragment, depth = walk(root, 0)

    # Source side: the root's closure with each slot's closure replaced by the slot.
    lo, hi = graph.lo, graph.hi
    by_position = sorted(slot_nodes, key=lo.__getitem__)
    slot_of_node = {node: k for k, node in enumerate(by_position)}
    source: list[Symbol] = []
    source_pos: dict[int, int] = {}  # sentence position -> position in the rule's source side
    words = graph.source_words
    p = lo[root]
    end = hi[root]
    k = 0
    n_slots = len(by_position)
    while p <= end:
        if k < n_slots and p == lo[by_position[k]]:
            source.append(k)
            p = hi[by_position[k]] + 1
            k += 1
        else:
            source_pos[p] = len(source)
            source.append(words[p])
            p += 1

    alignment = []
    target_links = graph.target_links
    for t, j in enumerate(target_word_at):
        if j >= 0:
            for i in target_links[j]:
                alignment.append((source_pos[i], t))
    alignment.sort()
    rule = ExtractedRule(
        lhs=labels_of[root],
        source=tuple(source),
        target=tuple(slot_of_node[s] if isinstance(s, int) else s for s in target),
        labels=tuple(labels_of[node] for node in by_position),
        alignment=tuple(alignment),
        tree=fragment,
        size=1,
    )
    info = _Minimal(tuple(slot_nodes), tuple(slot_distance), len(source), depth)
    return rule, info
