"""Derivation read-back: from a derivation in the exported chart to its output, tree and features.

A derivation is given as its edges in pre-order (an edge, then the derivations of
its tails in order), over the chart that the compiled search exported
(decoder._ext._chart.ChartSearch.export): the form the compiled k-best
(decoder._ext._kbest) returns, and `best_derivation` and `preorder_edges` make.
`DerivationReader.read` walks it and returns a `ReadBack`: the target words, the
target tree (the source rules' tree fragments with their nonterminal leaves filled
in), every feature recomputed from the rules used, and the derivation as nested
dicts. `edge_blocks` is the cheap part of that walk (target words only), which the
Python reference k-best (decoder.search.kbest.ReferenceLazyKBest) needs for every candidate.

Every walk here uses an explicit stack, not recursion: a derivation is as deep as
the sentence is long (a glue chain over 1,000 unknown words is 1,000 levels).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from decoder._ext import compiled_module

from .model import GLUE, GOAL, LM, OOV, WORD_COUNT

EdgeKind = compiled_module("_chart").EdgeKind

# The kinds of edge besides a rule id (>= 0), as ext/_chart.pxd defines them (the one definition);
# plain ints here because read-back compares every edge's rule with them.
EDGE_OOV = int(EdgeKind.EDGE_OOV)                  # pass-through of the source word at tail0
EDGE_GLUE_START = int(EdgeKind.EDGE_GLUE_START)    # GOAL -> X
EDGE_GLUE_CONCAT = int(EdgeKind.EDGE_GLUE_CONCAT)  # GOAL -> GOAL X


@dataclass
class ReadBack:
    """One complete derivation read back from the chart."""

    score: float
    text: str
    words: list
    tree: str
    features: dict
    derivation: dict  # nested dicts: symbol, span, rule, source_rule, children


def edge_tails(chart, edge: int) -> list[int]:
    """The items an edge combines (none for a pass-through word, whose tail0 is a position)."""
    if chart["edge_rule"][edge] == EDGE_OOV:
        return []
    return [int(t) for t in (chart["edge_tail0"][edge], chart["edge_tail1"][edge]) if t >= 0]


def best_derivation(chart, roots, root_boundary, weight_lm: float):
    """(score, root index, edges in pre-order) of the best derivation: each item's best edge, down
    from the best root (its inside score plus the weighted sentence-end LM score, of </s>)."""
    finals = chart["item_score"][roots] + weight_lm * root_boundary
    r = int(np.argmax(finals))
    best_edge = chart["item_best_edge"]
    edges = []
    stack = [int(roots[r])]
    while stack:
        edge = int(best_edge[stack.pop()])
        edges.append(edge)
        stack.extend(reversed(edge_tails(chart, edge)))
    return float(finals[r]), r, edges


def preorder_edges(tree) -> list[int]:
    """A derivation tree (edge, [subtrees]) as its edges in pre-order (the form `read` takes)."""
    edges = []
    stack = [tree]
    while stack:
        edge, subtrees = stack.pop()
        edges.append(int(edge))
        stack.extend(reversed(subtrees))
    return edges


class DerivationReader:
    """Reads derivations of one grammar store back (caches rule targets and tree fragments)."""

    def __init__(self, store, weights, space, grammar):
        self.store = store
        self.weights = weights
        self.space = space
        self.symbol_names = grammar.symbol_names
        self.rule_word_count = grammar.rule_word_count
        # Glue feature values by the glued symbol (NaN: no such glue rule), as the search scored them.
        self.glue_start_value = np.nan_to_num(grammar.arrays["glue_start_value"], nan=0.0)
        self.glue_concat_value = np.nan_to_num(grammar.arrays["glue_concat_value"], nan=0.0)
        self._fragments: dict = {}
        self._targets: dict = {}
        self._labels: dict = {}

    def _rule_target(self, rule: int) -> tuple:
        target = self._targets.get(rule)
        if target is None:
            lo, hi = int(self.store.rule_target_offsets[rule]), int(self.store.rule_target_offsets[rule + 1])
            vocab = self.store.target_vocab
            target = tuple(vocab[t] if t >= 0 else t for t in self.store.rule_target[lo:hi].tolist())
            self._targets[rule] = target
        return target

    def _label(self, symbol: int) -> str:
        label = self._labels.get(symbol)
        if label is None:
            label = self._labels[symbol] = self.symbol_names.get(symbol, str(symbol))
        return label

    def edge_blocks(self, chart, words, edge: int, tail_blocks: list) -> tuple:
        """The target blocks (tuples of words) an edge makes from its tails' blocks."""
        rule = chart["edge_rule"][edge]
        carried = [b for blocks in tail_blocks for b in blocks]
        if rule == EDGE_OOV:
            return ((words[chart["edge_tail0"][edge]],),)
        if rule == EDGE_GLUE_START:
            return tuple(carried)
        if rule == EDGE_GLUE_CONCAT:
            return (carried[0] + carried[1],)
        if self.store.rule_carries[rule]:
            return tuple(carried)
        block: tuple = ()
        for item in self._rule_target(rule):
            block += (item,) if isinstance(item, str) else carried[-1 - item]
        return (block,)

    def features(self, chart, boundary: float, edges) -> dict:
        """Every feature of a derivation (its edges, any order), recomputed from the rules used."""
        store = self.store
        edges = np.asarray(edges, dtype=np.int64)
        rules = chart["edge_rule"][edges]
        features: dict = {name: 0.0 for name in self.weights.feature_names()}
        features[LM] = boundary + float(np.sum(chart["edge_lm"][edges]))
        grammar_rules = rules[rules >= 0]
        n_oov = int(np.count_nonzero(rules == EDGE_OOV))
        features[OOV] += n_oov
        features[WORD_COUNT] += n_oov + float(np.sum(self.rule_word_count[grammar_rules]))
        glue_start, glue_concat = edges[rules == EDGE_GLUE_START], edges[rules == EDGE_GLUE_CONCAT]
        symbols = chart["item_symbol"]
        features[GLUE] += float(np.sum(self.glue_start_value[symbols[chart["edge_tail0"][glue_start]]])
                                + np.sum(self.glue_concat_value[symbols[chart["edge_tail1"][glue_concat]]]))
        origins = store.rule_origin[grammar_rules]
        origins = origins[origins >= 0]
        if len(origins) and len(store.feature_names):
            sums = np.sum(np.asarray(store.features)[origins], axis=0, dtype=np.float64)
            for name, value in zip(store.feature_names, sums.tolist()):
                features[name] += value
        return features

    def read(self, chart, n_words: int, words, score: float, boundary: float, edges) -> ReadBack:
        """Text, target tree, features and derivation of a derivation (its edges in pre-order)."""
        store, n1 = self.store, n_words + 1
        target_vocab = store.target_vocab
        edges = np.asarray(edges, dtype=np.int64)
        rules = chart["edge_rule"][edges].tolist()
        heads = chart["edge_head"][edges]
        cells = chart["item_cell"][heads].tolist()
        symbols = chart["item_symbol"][heads].tolist()
        tail0 = chart["edge_tail0"][edges].tolist()
        tail1 = chart["edge_tail1"][edges].tolist()
        origins = np.where(chart["edge_rule"][edges] >= 0,
                           store.rule_origin[np.maximum(chart["edge_rule"][edges], 0)], -1).tolist()
        features = self.features(chart, boundary, edges)

        # Post-order over the pre-order edges: a node is done when its tails are. Each node makes
        # (carried blocks: lists of pieces, derivation dict); a piece is a word or (tree, words).
        stack: list = []   # [node index, number of tails, children's results]
        done = None
        for node, rule in enumerate(rules):
            n_tails = 0 if rule == EDGE_OOV else (tail0[node] >= 0) + (tail1[node] >= 0)
            stack.append((node, n_tails, []))
            while stack and len(stack[-1][2]) == stack[-1][1]:
                node, _, children = stack.pop()
                done = self._node(node, rules[node], cells[node], symbols[node], tail0[node], origins[node],
                                  children, n1, words, target_vocab)
                if stack:
                    stack[-1][2].append(done)
        blocks, derivation = done
        pieces = blocks[0]
        output = _words_of(pieces)
        tree_text = "[" + GOAL + " " + " ".join(p if isinstance(p, str) else p[0] for p in pieces) + "]"
        return ReadBack(score, " ".join(output), output, tree_text, features, derivation)

    def _node(self, node: int, rule: int, cell: int, symbol: int, tail0: int, origin: int, children: list,
              n1: int, words, target_vocab) -> tuple:
        """(carried blocks, derivation dict) of one node, from its children's."""
        label = self._label(symbol)
        info = {"symbol": label, "span": [cell // n1, cell % n1], "children": [d for _, d in children]}
        blocks = [b for child_blocks, _ in children for b in child_blocks]
        if rule == EDGE_OOV:
            word = words[tail0]
            info["rule"] = "oov"
            return [[(f"[{label} {word}]", [word])]], info
        if rule == EDGE_GLUE_START:
            info["rule"] = "glue-start"
            return blocks, info
        if rule == EDGE_GLUE_CONCAT:
            info["rule"] = "glue-concat"
            return [blocks[0] + blocks[1]], info
        info["rule"] = rule
        if origin >= 0:
            info["source_rule"] = origin
        if self.store.rule_carries[rule]:
            return blocks, info
        block = []
        for item in self._rule_target(rule):
            if isinstance(item, str):
                block.append(item)
            else:
                block.extend(blocks[-1 - item])
        if origin >= 0 and not self.store.symbol_is_virtual[symbol]:
            block = [(self._fill_fragment(label, origin, block), _words_of(block))]
        return [block], info

    def _fill_fragment(self, label: str, origin: int, pieces: list) -> str:
        """The source rule's target tree fragment with its nonterminal leaves replaced by the subtrees."""
        parts = self._fragments.get(origin)
        if parts is None:  # the fragment's text around its nonterminal leaves, split once
            fragment = self.store.tree(origin) or ""
            parts = self._fragments[origin] = _NONTERMINAL_LEAF.split(fragment) if fragment else ()
        subtrees = [p[0] for p in pieces if not isinstance(p, str)]
        if parts and len(parts) == len(subtrees) + 1:
            filled = [parts[0]]
            for subtree, text in zip(subtrees, parts[1:]):
                filled.append(subtree)
                filled.append(text)
            return "".join(filled)
        return "[" + label + " " + " ".join(p if isinstance(p, str) else p[0] for p in pieces) + "]"


_NONTERMINAL_LEAF = re.compile(r"\[[^\s\[\]]+\]")


def _words_of(pieces) -> list:
    out = []
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        else:
            out.extend(p[1])
    return out
