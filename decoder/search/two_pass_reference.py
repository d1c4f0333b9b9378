"""Two-pass LM-driven hypergraph search (Venugopal, Zollmann and Vogel 2007), in pure Python.

The reference answer for the compiled two-pass search, over the same data as
decoder.search.reference (a BinaryGrammar, an LM with `order` and `logprob`).

First pass (section 3.1): CKY in which items recombine on (X, i, j) alone (and the
unary round, as in decoder.search.model). Each item keeps the LM context e^1 and the
score w^1 of its best member; LM probabilities are computed as in the exhaustive
decoder, but over the children's e^1 only. Every incoming hyperedge is kept, up to
`edge_limit` per item (best first by w^1 through that edge), and each cell keeps its
`cell_limit` best items. The goal item roots a hypergraph of sentence-spanning
derivations.

Second pass (section 3.2, H.Search): a partial item [[e; alpha]] is the output so far
(scored exactly: rule weights of the unwound hyperedges and the LM over the words with
their true left context) and alpha, what is left to traverse in target order: words and
references (node, block, instance) to first-pass items. Its score, the agenda's order,
is the exact part plus the estimate of alpha: each remaining item's w^1, and the LM
n-grams across the block boundaries computed over the items' e^1 (Chiang's p over
q-contexts), through </s>. Unwinding replaces the leftmost reference by each of its
item's hyperedges in turn (every block of that instance at once, which is how the
monolingual binarization's items that carry several target blocks stay consistent),
moves the leading words into the output and rescores. Items whose last n-1 words and
remaining references are equal recombine (the k best of each class are kept).
Pruning: `beam` (items more than beam below the best item seen are dropped),
`agenda_limit` (the agenda keeps its best items) and `max_pops` (unwindings performed);
`stop` ("budget", "bound", "first": decoder.settings.SECOND_PASS_STOPS) may end the search
before that budget: "bound" once the best complete derivation scores at least the agenda's
best item, "first" at the first complete derivation. (The compiled first pass's cube-pruning
bounds, pop_limit, first_pass_items and first_pass_threshold, have no counterpart here: this
first pass builds every hyperedge.)
With all limits off the search enumerates the whole hypergraph and is exact over it.
"""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Optional

from ..binarize import BinaryGrammar
from ..grammar import unescape_word
from ..settings import SECOND_PASS_STOPS
from .model import GLUE, GOAL, LM, OOV, WORD_COUNT, SearchSpace, Weights
from .reference import BOS, EOS, STAR, Derivation, ReferenceDecoder, glue_concatenation, sentence_start

UNLIMITED = math.inf


# ---------------------------------------------------------------------------
# First pass: the hypergraph of approximate items


@dataclass(eq=False)
class PassEdge:
    """A kept hyperedge: its features without `lm`, and how its target blocks are made.

    `blocks[b]` lists what output block b is made of, in target order: words (str) and
    (tail index, tail block) pairs."""

    features: dict
    score: float            # weights . features, lm excluded
    first_pass: float       # score + the lm weight times the first pass's lm of this edge
    tails: tuple            # ApproximateItems, left to right
    rule: object            # a BinaryRule, or ("oov", word) / ("glue-start",) / ("glue-concat",)
    blocks: tuple


@dataclass(eq=False)
class ApproximateItem:
    """[X, i, j] : e^1, w^1 with every kept incoming hyperedge."""

    symbol: str
    span: tuple
    contexts: tuple = ()                         # e^1: one context per carried target block
    best: float = -math.inf                      # w^1
    edges: list = field(default_factory=list)    # best first once the cell is finished

    def add(self, edge: PassEdge, contexts: tuple):
        total = edge.first_pass + sum(t.best for t in edge.tails)
        self.edges.append((total, edge))
        if total > self.best:
            self.best, self.contexts = total, contexts

    def finish(self, edge_limit):
        self.edges.sort(key=lambda pair: -pair[0])
        if edge_limit < len(self.edges):
            del self.edges[int(edge_limit):]


@dataclass
class Hypergraph:
    words: tuple
    goal: Optional[ApproximateItem]
    edges_proposed: int
    items: int
    items_per_cell: dict            # span length -> items kept, summed over cells


# ---------------------------------------------------------------------------
# Second pass: partial items


@dataclass(eq=False)
class PartialItem:
    """[[e; alpha]]: output words so far, what is left, and how it was built."""

    score: float                # exact + estimate of `rest`: the agenda's order
    exact: float                # the output so far, exactly (rule weights and LM)
    lm_exact: float             # its LM log10 (the `lm` feature so far)
    context: tuple              # e: the last n-1 words of <s> + output
    words: tuple                # the output so far
    rest: tuple                 # alpha: words and (item, block, instance) references
    next_instance: int
    unwound: tuple = ()         # ((instance, edge, first tail instance), ...) in unwinding order
    dead: bool = False          # replaced in its recombination class

    @property
    def complete(self) -> bool:
        return not self.rest

    def key(self) -> tuple:
        """Recombination class: e, and alpha with instances numbered by first appearance."""
        names: dict = {}
        rest = tuple(e if isinstance(e, str) else (id(e[0]), e[1], names.setdefault(e[2], len(names)))
                     for e in self.rest)
        return self.context, rest


@dataclass
class TwoPassResult:
    best: Optional[Derivation]
    kbest: list
    hypergraph: Hypergraph
    stats: dict


class TwoPassReference(ReferenceDecoder):
    """Both passes; parameters as in the paper (first pass: cell_limit, edge_limit;
    second pass: beam Z, agenda_limit, max_pops). Defaults: no limits (exact over the
    whole first-pass hypergraph; tiny inputs only)."""

    def __init__(self, grammar: BinaryGrammar, lm, weights: Weights, space: SearchSpace | None = None, *,
                 cell_limit=UNLIMITED, edge_limit=UNLIMITED, beam=UNLIMITED, agenda_limit=UNLIMITED,
                 max_pops=UNLIMITED, stop: str = "budget"):
        super().__init__(grammar, lm, weights, space)
        self.cell_limit = cell_limit
        self.edge_limit = edge_limit
        self.beam = beam
        self.agenda_limit = agenda_limit
        self.max_pops = max_pops
        if stop not in SECOND_PASS_STOPS:
            raise ValueError(f"stop must be one of {SECOND_PASS_STOPS}, not {stop!r}")
        self.stop = stop
        self.order = lm.order

    # ---- first pass

    def _pass_edge(self, rule, tails: tuple) -> tuple[PassEdge, tuple]:
        """The hyperedge of `rule` over `tails` (items, or None for a matched run) and the
        contexts it gives its item (over the tails' e^1)."""
        contexts, edge = self.apply(rule, tails)
        tails = edge.tails
        sources = [(t, b) for t, tail in enumerate(tails) for b in range(len(tail.contexts))]
        if rule.target is None:
            blocks = tuple([pair] for pair in sources)
        else:
            blocks = ([item if isinstance(item, str) else sources[item] for item in rule.target],)
        return self._make_edge(edge.features, tails, rule, blocks), contexts

    def _make_edge(self, features: dict, tails: tuple, rule, blocks) -> PassEdge:
        without_lm = {k: v for k, v in features.items() if k != LM}
        score = self.weights.dot(without_lm)
        first = score + self.weights[LM] * features.get(LM, 0.0)
        return PassEdge(without_lm, score, first, tuple(tails), rule, tuple(tuple(b) for b in blocks))

    def first_pass(self, words) -> Hypergraph:
        words = tuple(words)
        n = len(words)
        space = self.space
        cells: dict = {}      # (i, j) -> [items parents may use]
        goals: dict = {}      # j -> the GOAL item over [0, j)
        proposed = 0
        per_length: dict = {}

        def child_options(i, j):
            run = words[i:j]
            options = [(run, None)] if run in self.runs else []
            return options + [(item.symbol, item) for item in cells.get((i, j), ())]

        def add(table, key, symbol, span, edge_and_contexts):
            edge, contexts = edge_and_contexts
            table.setdefault(key, ApproximateItem(symbol, span)).add(edge, contexts)

        for length in range(1, n + 1):
            for i in range(0, n - length + 1):
                j = i + length
                if length <= space.max_span:
                    round_items: dict = {}
                    if length == 1 and (words[i],) not in self.lexical:
                        for label in space.oov_labels:
                            edge = self._make_edge({OOV: 1.0, WORD_COUNT: 1.0}, (), ("oov", words[i]), ([words[i]],))
                            add(round_items, label, label, (i, j), (edge, ((words[i],),)))
                            proposed += 1
                    for rule in self.lexical.get(words[i:j], ()):
                        add(round_items, rule.lhs, rule.lhs, (i, j), self._pass_edge(rule, (None,)))
                        proposed += 1
                    for split in range(i + 1, j):
                        for left_symbol, left in child_options(i, split):
                            for right_symbol, right in child_options(split, j):
                                for rule in self.binary.get((left_symbol, right_symbol), ()):
                                    add(round_items, rule.lhs, rule.lhs, (i, j), self._pass_edge(rule, (left, right)))
                                    proposed += 1
                    visible = self._prune(list(round_items.values()))
                    frontier = visible
                    for _ in range(space.max_unary_depth):
                        new_items: dict = {}
                        for child in frontier:
                            for rule in self.unary.get(child.symbol, ()):
                                add(new_items, rule.lhs, rule.lhs, (i, j), self._pass_edge(rule, (child,)))
                                proposed += 1
                        # Items of different rounds stay distinct: merging could close a unary cycle.
                        frontier = self._prune(list(new_items.values()))
                        visible += frontier
                        if not frontier:
                            break
                    cells[(i, j)] = visible
                    per_length[length] = per_length.get(length, 0) + len(visible)
                if i == 0:
                    goal = ApproximateItem(GOAL, (0, j))
                    for item in cells.get((0, j), ()):
                        value = space.glue.start_value(item.symbol) if item.symbol in self.real_labels else None
                        if value is not None:
                            lm, context = sentence_start(item.contexts[0], self.lm)  # <s> X
                            goal.add(self._make_edge({GLUE: value, LM: lm}, (item,), ("glue-start",), ([(0, 0)],)),
                                     (context,))
                            proposed += 1
                    for split in range(1, j):
                        left = goals.get(split)
                        if left is None:
                            continue
                        for item in cells.get((split, j), ()):
                            value = space.glue.concat_value(item.symbol) if item.symbol in self.real_labels else None
                            if value is None:
                                continue
                            lm, context = glue_concatenation(left.contexts[0], item.contexts[0], self.lm)
                            features = {GLUE: value, LM: lm}
                            edge = self._make_edge(features, (left, item), ("glue-concat",), ([(0, 0), (1, 0)],))
                            goal.add(edge, (context,))
                            proposed += 1
                    if goal.edges:
                        goal.finish(self.edge_limit)
                        goals[j] = goal
        n_items = sum(per_length.values()) + len(goals)
        return Hypergraph(words, goals.get(n) if n else None, proposed, n_items, per_length)

    def _prune(self, items: list) -> list:
        """A finished round of a cell: the cell_limit best items, each with its edge_limit best edges."""
        items.sort(key=lambda item: -item.best)
        if self.cell_limit < len(items):
            del items[int(self.cell_limit):]
        for item in items:
            item.finish(self.edge_limit)
        return items

    # ---- second pass: scoring

    def _lm(self, context: tuple, word: str) -> float:
        return self.lm.logprob(tuple(unescape_word(w) for w in context), unescape_word(word))

    def estimate(self, context: tuple, rest: tuple) -> float:
        """What alpha is expected to add after e: the w^1 of each remaining instance, and the
        LM n-grams across block boundaries over the e^1 contexts (and </s>) that no item
        scored: those whose window of n-1 words holds no STAR (or reaches <s>). A GOAL item (first in
        alpha, after e = <s>) has <s> and its first words scored (the glue start): its context, which
        begins with <s>, replaces e."""
        seen = set()
        total = 0.0
        sequence = list(context)
        start = len(context)
        for element in rest:
            if isinstance(element, str):
                sequence.append(element)
            else:
                item, block, instance = element
                if instance not in seen:
                    seen.add(instance)
                    total += item.best
                if item.contexts[block][:1] == (BOS,):
                    assert tuple(sequence) == (BOS,), "a GOAL item is only first, after <s>"
                    sequence = list(item.contexts[block])
                    start = len(sequence)
                else:
                    sequence.extend(item.contexts[block])
        sequence.append(EOS)
        lm = 0.0
        n = self.order
        for position in range(start, len(sequence)):
            word = sequence[position]
            window = tuple(sequence[max(0, position - n + 1):position])
            if word is STAR or STAR in window:
                continue
            # No such n-gram lies wholly inside one q-context (its first n-1 words lack a
            # full window there, the words after STAR have STAR in theirs): none was scored.
            lm += self._lm(window, word)
        return total + self.weights[LM] * lm

    def start(self, graph: Hypergraph) -> PartialItem:
        """The axiom [[<s>; P_S]] : w*."""
        rest = ((graph.goal, 0, 0),)
        context = (BOS,)
        return PartialItem(self.estimate(context, rest), 0.0, 0.0, context, (), rest, 1)

    def unwind(self, item: PartialItem) -> list[PartialItem]:
        """One partial item per kept hyperedge of the leftmost reference's item."""
        first, _, instance = item.rest[0]
        out = []
        weight_lm = self.weights[LM]
        for _, edge in first.edges:
            base = item.next_instance
            expansion = [[w if isinstance(w, str) else (edge.tails[w[0]], w[1], base + w[0]) for w in block]
                         for block in edge.blocks]
            rest: list = []
            for element in item.rest:
                if not isinstance(element, str) and element[2] == instance:
                    rest.extend(expansion[element[1]])
                else:
                    rest.append(element)
            context, words, lm = item.context, item.words, 0.0
            while rest and isinstance(rest[0], str):
                word = rest.pop(0)
                lm += self._lm(context, word)
                context = (context + (word,))[-(self.order - 1):] if self.order > 1 else ()
                words += (word,)
            if not rest:
                lm += self._lm(context, EOS)
            rest = tuple(rest)
            exact = item.exact + edge.score + weight_lm * lm
            score = exact if not rest else exact + self.estimate(context, rest)
            out.append(PartialItem(score, exact, item.lm_exact + lm, context, words, rest,
                                   base + len(edge.tails), item.unwound + ((instance, edge, base),)))
        return out

    # ---- second pass: the agenda

    def decode(self, words, k: int = 1, trace: list | None = None) -> TwoPassResult:
        """The k best derivations two-pass search finds. `trace`, if given, receives the
        popped partial items in order (for tests of the agenda order)."""
        graph = self.first_pass(words)
        stats = {"edges_proposed": graph.edges_proposed, "items": graph.items,
                 "items_per_cell": graph.items_per_cell, "agenda_pops": 0, "unwindings": 0}
        if graph.goal is None:
            return TwoPassResult(None, [], graph, stats)
        tie = itertools.count()
        agenda: list = []
        classes: dict = {}        # recombination key -> the (up to k) live items of that class
        complete: list = []
        best_seen = -math.inf

        def push(candidate: PartialItem):
            nonlocal best_seen, agenda
            best_seen = max(best_seen, candidate.score)
            if candidate.score < best_seen - self.beam:
                return
            if candidate.complete:
                complete.append(candidate)
                return
            members = classes.setdefault(candidate.key(), [])
            if len(members) >= k:
                worst = min(members, key=lambda m: m.score)
                if worst.score >= candidate.score:
                    return  # filed into a class with better items: not scheduled
                worst.dead = True
                members.remove(worst)
            members.append(candidate)
            heapq.heappush(agenda, (-candidate.score, next(tie), candidate))
            if len(agenda) > self.agenda_limit:
                agenda = heapq.nsmallest(int(self.agenda_limit), agenda)
                heapq.heapify(agenda)

        start = self.start(graph)
        push(start)
        while agenda and stats["agenda_pops"] < self.max_pops:
            if complete and (self.stop == "first" or (
                    self.stop == "bound" and max(c.score for c in complete) >= -agenda[0][0])):
                break
            _, _, item = heapq.heappop(agenda)
            if item.dead or item.score < best_seen - self.beam:
                continue
            stats["agenda_pops"] += 1
            if trace is not None:
                trace.append(item)
            children = self.unwind(item)
            stats["unwindings"] += len(children)
            for child in children:
                push(child)
        if not complete:
            complete.append(self.complete_greedily(start))
        complete.sort(key=lambda c: -c.score)
        kbest = [self.derivation(c) for c in complete[:k]]
        return TwoPassResult(kbest[0], kbest, graph, stats)

    def complete_greedily(self, item: PartialItem) -> PartialItem:
        """Unwind each leftmost reference into its item's best hyperedge: the first pass's
        best derivation, rescored exactly (what pruning falls back to)."""
        while not item.complete:
            item = self.unwind(item)[0]
        return item

    def derivation(self, item: PartialItem) -> Derivation:
        """The derivation of a complete item: features summed over its hyperedges, the tree as
        decoder.search.reference builds it ((edge, [child trees]))."""
        features: dict = {LM: item.lm_exact}
        by_instance = {}
        for instance, edge, base in item.unwound:
            by_instance[instance] = (edge, base)
            for name, value in edge.features.items():
                features[name] = features.get(name, 0.0) + value

        def tree(instance):
            edge, base = by_instance[instance]
            return (edge, [tree(base + t) for t in range(len(edge.tails))])

        return Derivation(item.exact, features, list(item.words), tree(0))
