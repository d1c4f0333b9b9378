"""A pure-Python exhaustive CKY decoder: the reference answer for the compiled one.

Items are [X, i, j, e] (Chiang 2007; Venugopal et al. 2007, Figure 1): X a real or
virtual nonterminal over source span [i, j), e its LM context. A context is
Chiang's q(a): the words of a target block if it has fewer than n words, else its
first n-1 words, STAR, its last n-1 words. Rule application scores p(a'), the
n-grams that become complete (n-1 words of context and no STAR inside), so every
word is scored exactly once. The glue start GOAL -> X scores <s> X, as Moses' glue
rule: X's first words get the sentence-start context (their window reaches back to
the leading <s>), and a GOAL context keeps <s> first (goal_context); the root adds
</s> (sentence_end).

A synchronous item carries one block; a monolingual virtual item carries the
contexts of every block below it, unscored, until the real nonterminal's rule
joins them (Zhang et al. 2006). Nothing is pruned: items equal in (X, i, j, e)
recombine, all derivations stay as edges, and the k best come from the complete
hypergraph. The search space outside the grammar (glue, unknown words, spans,
unary rounds) is described in decoder.search.model.

Slow by design; for tests on tiny grammars and sentences.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Optional

from ..binarize import BinaryGrammar, BinaryRule
from ..binarize.binary_grammar import assemble_target
from ..grammar import unescape_word
from .model import GLUE, GOAL, LM, OOV, WORD_COUNT, SearchSpace, Weights

STAR = None  # elided words in a context
BOS, EOS = "<s>", "</s>"


# ---------------------------------------------------------------------------
# Chiang's p and q over contexts (tuples of words and STAR)


def complete_ngrams(sequence: tuple, lm, scored: int = 0) -> float:
    """log10 of the n-grams of `sequence` with a full, STAR-free context of n-1 words; in a sequence
    that begins with <s> (a GOAL context), also those whose shorter context reaches back to the <s>.
    The first `scored` words were scored before (a GOAL context's, <s> itself)."""
    n = lm.order
    total = 0.0
    after_bos = bool(sequence) and sequence[0] == BOS
    for i in range(max(1 if after_bos else n - 1, scored), len(sequence)):
        word = sequence[i]
        context = sequence[max(0, i - n + 1):i]
        if word is STAR or STAR in context or (len(context) < n - 1 and not after_bos):
            continue
        total += lm.logprob(_plain(context), unescape_word(word))
    return total


def _plain(context: tuple) -> tuple:
    """Rule-table words as the LM knows them (decoder.grammar.unescape_word)."""
    return tuple(unescape_word(w) for w in context)


def elide(sequence: tuple, order: int) -> tuple:
    """Chiang's q: keep the first and last n-1 words around a STAR if there are n or more."""
    if len(sequence) < order:
        return sequence
    return sequence[:order - 1] + (STAR,) + sequence[len(sequence) - order + 1:]


def goal_context(sequence: tuple, order: int) -> tuple:
    """A GOAL item's context, from its output's context that begins with <s>: the whole of it if short,
    else <s>, STAR and the last n-1 words (its first words are scored, and only the last ones still
    matter: GOAL items recombine on them, as KenLM's state after BeginSentence)."""
    if len(sequence) < order:
        return sequence
    return (BOS, STAR) + sequence[len(sequence) - order + 1:]


def sentence_start(context: tuple, lm) -> tuple:
    """The glue start GOAL -> X, i.e. <s> X: (log10 of X's first words with the sentence start as
    context, the GOAL item's context)."""
    sequence = (BOS,) + context
    return complete_ngrams(sequence, lm, scored=1), goal_context(elide(sequence, lm.order), lm.order)


def glue_concatenation(goal: tuple, context: tuple, lm) -> tuple:
    """GOAL -> GOAL X: (log10 of the n-grams that become complete, the new GOAL item's context)."""
    sequence = goal + context
    return complete_ngrams(sequence, lm, scored=len(goal)), goal_context(elide(sequence, lm.order), lm.order)


def sentence_end(context: tuple, lm) -> float:
    """What </s> adds after a GOAL item over the whole sentence (its context begins with <s>)."""
    window = context[max(0, len(context) - lm.order + 1):]
    if STAR in window:  # (a GOAL context's last n-1 words are never elided)
        raise ValueError(f"GOAL context {context} has no last n-1 words")
    return lm.logprob(_plain(window), EOS)


# ---------------------------------------------------------------------------
# The hypergraph


@dataclass(eq=False)
class Edge:
    features: dict
    score: float                # weights . features (this edge only)
    tails: tuple                # Nodes, left to right
    rule: object                # a BinaryRule, or ("oov", word) / ("glue-start",) / ("glue-concat",)


@dataclass(eq=False)
class Node:
    symbol: str
    span: tuple
    contexts: tuple             # one context per carried target block
    best: float = float("-inf")
    edges: list = field(default_factory=list)
    best_edge: Optional[Edge] = None

    def add(self, edge: Edge) -> bool:
        self.edges.append(edge)
        total = edge.score + sum(t.best for t in edge.tails)
        if total > self.best:
            self.best = total
            self.best_edge = edge
            return True
        return False


@dataclass
class Derivation:
    """One derivation: its score, features, target words and the edges used (a tree)."""

    score: float
    features: dict
    words: list
    tree: tuple  # (edge, [child trees])


@dataclass
class ReferenceResult:
    best: Optional[Derivation]
    kbest: list
    edges_proposed: int
    nodes: int


class ReferenceDecoder:
    def __init__(self, grammar: BinaryGrammar, lm, weights: Weights, space: SearchSpace | None = None):
        self.grammar = grammar
        self.lm = lm
        self.weights = weights
        self.space = space or SearchSpace()
        self.lexical: dict = {}
        self.unary: dict = {}
        self.binary: dict = {}
        self.runs: set = set()
        for rule in grammar.rules:
            children = rule.children
            for c in children:
                if isinstance(c, tuple):
                    self.runs.add(c)
            if len(children) == 1:
                table = self.lexical if isinstance(children[0], tuple) else self.unary
                table.setdefault(children[0], []).append(rule)
            else:
                self.binary.setdefault(children, []).append(rule)
        self.real_labels = {r.lhs for r in grammar.rules if not r.lhs.startswith("<")}
        self.real_labels.update(self.space.oov_labels)

    # ---- features of one rule application

    def rule_features(self, rule) -> dict:
        features = {}
        if rule.origin >= 0:
            source_rule = self.grammar.source_rules[rule.origin]
            for name, value in zip(self.weights.rule_feature_names, source_rule.log_scores()):
                features[name] = features.get(name, 0.0) + value
        if rule.target is not None:
            features[WORD_COUNT] = float(sum(isinstance(t, str) for t in rule.target))
        return features

    def _edge(self, features: dict, tails: tuple, rule) -> Edge:
        return Edge(features, self.weights.dot(features), tails, rule)

    def apply(self, rule, tails: tuple) -> tuple[tuple, Edge]:
        """(contexts of the new item, the edge); tails are Nodes, or None for a matched run."""
        blocks = [ctx for t in tails if t is not None for ctx in t.contexts]
        features = self.rule_features(rule)
        if rule.target is None:  # monolingual virtual: carry the blocks, score nothing yet
            contexts = tuple(blocks)
        else:
            sequence: tuple = ()
            for item in rule.target:
                sequence += (item,) if isinstance(item, str) else blocks[item]
            features[LM] = complete_ngrams(sequence, self.lm)
            contexts = (elide(sequence, self.lm.order),)
        return contexts, self._edge(features, tuple(t for t in tails if t is not None), rule)

    # ---- the chart

    def decode(self, words, k: int = 1) -> ReferenceResult:
        words = list(words)
        n = len(words)
        space = self.space
        cells: dict = {}      # (i, j) -> {key: Node}, the nodes parents may use
        goals: dict = {}      # j -> {context: Node} for GOAL over [0, j)
        proposed = 0
        n_nodes = 0

        def child_options(i, j):
            options = []
            run = tuple(words[i:j])
            if run in self.runs:
                options.append((run, None))
            for node in cells.get((i, j), {}).values():
                options.append((node.symbol, node))
            return options

        for length in range(1, n + 1):
            for i in range(0, n - length + 1):
                j = i + length
                round_nodes: dict = {}
                if length <= space.max_span:
                    if length == 1 and (words[i],) not in self.lexical:
                        for label in space.oov_labels:
                            features = {OOV: 1.0, WORD_COUNT: 1.0}
                            node = round_nodes.setdefault((label, ((words[i],),)),
                                                          Node(label, (i, j), ((words[i],),)))
                            node.add(self._edge(features, (), ("oov", words[i])))
                            proposed += 1
                    for rule in self.lexical.get(tuple(words[i:j]), ()):
                        contexts, edge = self.apply(rule, (None,))
                        round_nodes.setdefault((rule.lhs, contexts), Node(rule.lhs, (i, j), contexts)).add(edge)
                        proposed += 1
                    for split in range(i + 1, j):
                        for left_symbol, left in child_options(i, split):
                            for right_symbol, right in child_options(split, j):
                                for rule in self.binary.get((left_symbol, right_symbol), ()):
                                    contexts, edge = self.apply(rule, (left, right))
                                    node = round_nodes.setdefault((rule.lhs, contexts),
                                                                  Node(rule.lhs, (i, j), contexts))
                                    node.add(edge)
                                    proposed += 1
                    visible = dict(round_nodes)
                    frontier = list(round_nodes.values())
                    for unary_round in range(1, space.max_unary_depth + 1):
                        new_nodes: dict = {}
                        for child in frontier:
                            for rule in self.unary.get(child.symbol, ()):
                                contexts, edge = self.apply(rule, (child,))
                                new_nodes.setdefault((rule.lhs, contexts), Node(rule.lhs, (i, j), contexts)).add(edge)
                                proposed += 1
                        # Equal items of different rounds stay distinct: merging could close a unary cycle.
                        for (symbol, contexts), node in new_nodes.items():
                            visible[(symbol, contexts, unary_round)] = node
                        n_nodes += len(new_nodes)
                        frontier = list(new_nodes.values())
                        if not frontier:
                            break
                    n_nodes += len(round_nodes)
                    cells[(i, j)] = visible
                if i == 0:
                    goal_nodes: dict = {}
                    for node in cells.get((0, j), {}).values():
                        value = space.glue.start_value(node.symbol) if node.symbol in self.real_labels else None
                        if value is None:
                            continue
                        lm, contexts = sentence_start(node.contexts[0], self.lm)
                        edge = self._edge({GLUE: value, LM: lm}, (node,), ("glue-start",))
                        contexts = (contexts,)
                        goal_nodes.setdefault(contexts, Node(GOAL, (0, j), contexts)).add(edge)
                        proposed += 1
                    for split in range(1, j):
                        for goal in goals.get(split, {}).values():
                            for node in cells.get((split, j), {}).values():
                                value = space.glue.concat_value(node.symbol) if node.symbol in self.real_labels else None
                                if value is None:
                                    continue
                                lm, contexts = glue_concatenation(goal.contexts[0], node.contexts[0], self.lm)
                                features = {GLUE: value, LM: lm}
                                contexts = (contexts,)
                                edge = self._edge(features, (goal, node), ("glue-concat",))
                                goal_nodes.setdefault(contexts, Node(GOAL, (0, j), contexts)).add(edge)
                                proposed += 1
                    goals[j] = goal_nodes
                    n_nodes += len(goal_nodes)

        roots = []
        for node in goals.get(n, {}).values():
            boundary = sentence_end(node.contexts[0], self.lm)
            roots.append((node, boundary))
        kbest = self._kbest(roots, k) if n else []
        best = kbest[0] if kbest else None
        return ReferenceResult(best, kbest, proposed, n_nodes)

    # ---- k-best over the complete hypergraph

    def _kbest(self, roots, k: int) -> list:
        memo: dict = {}

        def node_kbest(node: Node) -> list:
            """Up to k (score, edge, tail derivations) for a node, best first."""
            if id(node) in memo:
                return memo[id(node)]
            candidates = []
            for edge in node.edges:
                tail_lists = [node_kbest(t) for t in edge.tails]
                combos = [(edge.score, ())]
                for tail_list in tail_lists:
                    combos = heapq.nlargest(k, ((s + td[0], picks + (td,)) for s, picks in combos
                                                for td in tail_list), key=lambda c: c[0])
                for score, picks in combos:
                    candidates.append((score, edge, picks))
            result = heapq.nlargest(k, candidates, key=lambda c: c[0])
            memo[id(node)] = result
            return result

        finals = []
        for node, boundary in roots:
            for score, edge, picks in node_kbest(node):
                finals.append((score + self.weights[LM] * boundary, boundary, (score, edge, picks)))
        finals = heapq.nlargest(k, finals, key=lambda c: c[0])
        return [self._derivation(total, boundary, d) for total, boundary, d in finals]

    def _derivation(self, total: float, boundary: float, top) -> Derivation:
        features: dict = {LM: boundary}

        def walk(d):
            _, edge, picks = d
            for name, value in edge.features.items():
                features[name] = features.get(name, 0.0) + value
            subtrees = [walk(p) for p in picks]
            blocks = [b for _, sub_blocks in subtrees for b in sub_blocks]
            rule = edge.rule
            if not isinstance(rule, BinaryRule):
                if rule[0] == "oov":
                    out_blocks = [[rule[1]]]
                elif rule[0] == "glue-start":
                    out_blocks = blocks
                else:
                    out_blocks = [blocks[0] + blocks[1]]
            elif rule.target is None:
                out_blocks = blocks
            else:
                out_blocks = [assemble_target(rule.target, blocks)]
            return ((edge, [s for s, _ in subtrees]), out_blocks)

        tree, blocks = walk(top)
        return Derivation(total, features, blocks[0], tree)
