"""Derivation read-back: from a derivation in the exported chart to its output, tree and features.

A derivation is a tree (edge, [subtrees]) over the chart that the compiled search
exported (decoder._ext._chart.ChartSearch.export). `DerivationReader.read` walks it
and returns a `ReadBack`: the target words, the target tree (the source rules'
tree fragments with their nonterminal leaves filled in), every feature recomputed
from the rules used, and the derivation as nested dicts. `edge_blocks` is the
cheap part of that walk (target words only), which unique k-best needs for every
candidate.
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
    """(score, root index, derivation tree) of the best derivation: each item's best edge, down from
    the best root (its inside score plus the weighted sentence-boundary LM score)."""
    finals = chart["item_score"][roots] + weight_lm * root_boundary
    r = int(np.argmax(finals))

    def best_tree(item):
        edge = int(chart["item_best_edge"][item])
        return (edge, [best_tree(t) for t in edge_tails(chart, edge)])

    return float(finals[r]), r, best_tree(int(roots[r]))


class DerivationReader:
    """Reads derivations of one grammar store back (caches rule targets and tree fragments)."""

    def __init__(self, store, weights, space, grammar):
        self.store = store
        self.weights = weights
        self.space = space
        self.symbol_names = grammar.symbol_names
        self.rule_word_count = grammar.rule_word_count
        self._fragments: dict = {}
        self._targets: dict = {}

    def _rule_target(self, rule: int) -> tuple:
        target = self._targets.get(rule)
        if target is None:
            lo, hi = int(self.store.rule_target_offsets[rule]), int(self.store.rule_target_offsets[rule + 1])
            vocab = self.store.target_vocab
            target = tuple(vocab[t] if t >= 0 else t for t in self.store.rule_target[lo:hi].tolist())
            self._targets[rule] = target
        return target

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

    def read(self, chart, n_words: int, words, score: float, boundary: float, tree) -> ReadBack:
        """Text, target tree, features and derivation of a derivation tree (edge, [subtrees])."""
        store, n1 = self.store, n_words + 1
        target_vocab = store.target_vocab
        features: dict = {name: 0.0 for name in self.weights.feature_names()}
        features[LM] = boundary

        def walk(node):
            """-> (carried blocks: lists of pieces, derivation dict); a piece is a word or (tree, words)."""
            edge, subtrees = node
            rule = int(chart["edge_rule"][edge])
            head = int(chart["edge_head"][edge])
            features[LM] += float(chart["edge_lm"][edge])
            cell = int(chart["item_cell"][head])
            symbol = int(chart["item_symbol"][head])
            label = self.symbol_names.get(symbol, str(symbol))
            info = {"symbol": label, "span": [cell // n1, cell % n1]}
            children = [walk(s) for s in subtrees]
            blocks = [b for child_blocks, _ in children for b in child_blocks]
            info["children"] = [d for _, d in children]
            if rule == EDGE_OOV:
                word = words[int(chart["edge_tail0"][edge])]
                features[OOV] += 1.0
                features[WORD_COUNT] += 1.0
                info["rule"] = "oov"
                return [[(f"[{label} {word}]", [word])]], info
            if rule == EDGE_GLUE_START:
                child_symbol = self.symbol_names[int(chart["item_symbol"][int(chart["edge_head"][subtrees[0][0]])])]
                features[GLUE] += self._glue_value(child_symbol, start=True)
                info["rule"] = "glue-start"
                return blocks, info
            if rule == EDGE_GLUE_CONCAT:
                child_symbol = self.symbol_names[int(chart["item_symbol"][int(chart["edge_head"][subtrees[1][0]])])]
                features[GLUE] += self._glue_value(child_symbol, start=False)
                info["rule"] = "glue-concat"
                return [blocks[0] + blocks[1]], info
            info["rule"] = rule
            features[WORD_COUNT] += float(self.rule_word_count[rule])
            origin = int(store.rule_origin[rule])
            if origin >= 0:
                info["source_rule"] = origin
                for name, value in zip(store.feature_names, store.features[origin]):
                    features[name] += float(value)
            if store.rule_carries[rule]:
                return blocks, info
            block = []
            lo, hi = int(store.rule_target_offsets[rule]), int(store.rule_target_offsets[rule + 1])
            for item in store.rule_target[lo:hi].tolist():
                if item >= 0:
                    block.append(target_vocab[item])
                else:
                    block.extend(blocks[-1 - item])
            if origin >= 0 and not store.symbol_is_virtual[symbol]:
                block = [(self._fill_fragment(label, origin, block), _words_of(block))]
            return [block], info

        blocks, derivation = walk(tree)
        pieces = blocks[0]
        output = _words_of(pieces)
        tree_text = "[" + GOAL + " " + " ".join(p if isinstance(p, str) else p[0] for p in pieces) + "]"
        return ReadBack(score, " ".join(output), output, tree_text, features, derivation)

    def _glue_value(self, label: str, start: bool) -> float:
        value = self.space.glue.start_value(label) if start else self.space.glue.concat_value(label)
        return float(value or 0.0)

    def _fill_fragment(self, label: str, origin: int, pieces: list) -> str:
        """The source rule's target tree fragment with its nonterminal leaves replaced by the subtrees."""
        fragment = self._fragments.get(origin)
        if fragment is None:
            fragment = self.store.tree(origin) or ""
            self._fragments[origin] = fragment
        subtrees = [p[0] for p in pieces if not isinstance(p, str)]
        if fragment:
            leaves = _NONTERMINAL_LEAF.findall(fragment)
            if len(leaves) == len(subtrees):
                queue = iter(subtrees)
                return _NONTERMINAL_LEAF.sub(lambda m: next(queue), fragment)
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
