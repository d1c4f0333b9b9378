"""Incremental search by boundary-word grouping, in pure Python: the reference answer.

The algorithm is Heafield, Koehn and Lavie (2013), "Grouping language model
boundary words to speed k-best extraction from hypergraphs" (NAACL), over the
items of decoder.search.reference (Chiang's contexts, no LM estimates):

- A vertex is the items of one nonterminal in one cell (every unary round). Its
  items are grouped in a trie by their boundary words: per carried block, the
  left words outermost first alternating with the right words outermost
  (last word) first, each side closed by an end token; the leaves are the items.
  A trie node's score is its best descendant's inside score (Section 3). The
  trie is path-compressed: a node with one child is that child (a node reveals
  every token its items share; a vertex's single item is its root).
- A partial edge is a hyperedge whose tails are trie nodes, or the rest of a
  node's children after its best ones were split off. Its score is the rule's
  score, the tails' scores and the LM score of the n-grams whose words are all
  revealed so far (unrevealed words contribute nothing, Section 4). An edge
  whose tails are still at their roots (and the rest edges split from it) is
  scored with its rule's words alone: nothing of its tails revealed.
- Partial edges wait in a priority queue (Section 5); as in Moses' incremental
  search the queue and the pop limit are per cell (and unary round, and GOAL
  over [0, j)), which makes the pop limit mean what cube pruning's means
  (also with pop_count "real": a queue for the virtual rules' entries first,
  with its own limit, then one for the rest, as the compiled searches). A
  popped edge whose tails are all items is a complete hypothesis: it is scored
  exactly, recombined into its vertex's item, and counts as a pop. Otherwise
  the tail with the fewest revealed words (the most general context) is split
  into its best child, which reveals one more boundary word, and the node's
  remaining children, with the next child's score; both go back on the queue.
- flat_items (as the compiled search's argument; 0: off): a tail whose node
  has at most that many items is split after the other tail and then flat: its
  items one by one, best first, instead of down the trie. An edge over one of
  them keeps the node's estimate (the words the node reveals) until it is
  complete (then exact) or its other tail is split (then the item's words);
  an edge split from a words-only estimate is rescored at once, as any.

With no pop limit every hypothesis is completed and the hypergraph equals the
exhaustive one (tests/test_search_incremental.py holds it to brute force).
Slow by design; for tests on tiny grammars and sentences.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Optional

from .model import GLUE, GOAL, LM, OOV, WORD_COUNT
from .reference import (BOS, STAR, Node, ReferenceDecoder, ReferenceResult, complete_ngrams, glue_concatenation,
                        sentence_end, sentence_start)

LEFT, RIGHT = 0, 1
END_SHORT = ("end", "short")  # the context has fewer than n words: the left side is all of it
END_LONG = ("end", "long")    # the context is first n-1 words, STAR, last n-1 words


def boundary_tokens(contexts: tuple) -> tuple:
    """The trie key of an item: (block, side, word) tokens, one boundary word at a time."""
    tokens = []
    for b, context in enumerate(contexts):
        if STAR in context:
            star = context.index(STAR)
            left = list(context[:star]) + [END_LONG]
            right = list(reversed(context[star + 1:])) + [END_LONG]
        else:
            left, right = list(context) + [END_SHORT], []
        for k in range(max(len(left), len(right))):
            if k < len(left):
                tokens.append((b, LEFT, left[k]))
            if k < len(right):
                tokens.append((b, RIGHT, right[k]))
    return tuple(tokens)


class TrieNode:
    """Items of a vertex sharing the revealed boundary words `revealed`; children best first."""

    __slots__ = ("revealed", "children", "item", "score", "n_items")

    def __init__(self, revealed: tuple, item: Optional[Node] = None):
        self.revealed = revealed
        self.children: list = []
        self.item = item
        self.score = item.best if item is not None else float("-inf")
        self.n_items = 1 if item is not None else 0

    def leaves(self) -> list:
        """The node's items (leaves), best first."""
        if self.item is not None:
            return [self]
        return sorted((leaf for child in self.children for leaf in child.leaves()), key=lambda leaf: -leaf.score)


def build_trie(items: list) -> TrieNode:
    """The boundary-word trie over a vertex's items (Nodes)."""
    root = TrieNode(())
    for item in items:
        node = root
        tokens = boundary_tokens(item.contexts)
        for depth, token in enumerate(tokens):
            child = next((c for c in node.children if c.revealed[-1] == token), None)
            if child is None:
                child = TrieNode(tokens[:depth + 1])
                node.children.append(child)
            node = child
        node.children.append(TrieNode(tokens + (("item", id(item)),), item))

    def finish(node: TrieNode) -> float:
        if node.item is None:
            node.score = max(finish(c) for c in node.children)
            node.n_items = sum(c.n_items for c in node.children)
            node.children.sort(key=lambda c: -c.score)
            if len(node.children) == 1:  # path compression: one refinement reveals what they all share
                (child,) = node.children
                node.revealed, node.children, node.item = child.revealed, child.children, child.item
                node.n_items = child.n_items
        return node.score

    finish(root)
    return root


def partial_contexts(node: TrieNode, n_blocks: int) -> list:
    """Per block, the context as far as the node reveals it (STAR: words not yet known)."""
    if node.item is not None:
        return list(node.item.contexts)
    left = [[] for _ in range(n_blocks)]
    right = [[] for _ in range(n_blocks)]
    done = [None] * n_blocks
    for b, side, word in node.revealed:
        if word in (END_SHORT, END_LONG):
            if side == LEFT:
                done[b] = word
            continue
        (left if side == LEFT else right)[b].append(word)
    out = []
    for b in range(n_blocks):
        if done[b] == END_SHORT:
            out.append(tuple(left[b]))
        else:
            out.append(tuple(left[b]) + (STAR,) + tuple(reversed(right[b])))
    return out


class Tail:
    """A partial edge's view of one tail vertex: children[first:] of a trie node (first 0: the node), or of a
    flat one, its leaves[first:] (its items, best first). shown: the node whose revealed words the edge's LM
    estimate sees (an item of a flat tail: the flat node, until the edge is rescored)."""

    __slots__ = ("node", "first", "leaves", "shown")

    def __init__(self, node: TrieNode, first: int = 0, leaves: Optional[list] = None,
                 shown: Optional[TrieNode] = None):
        self.node, self.first, self.leaves = node, first, leaves
        self.shown = shown if shown is not None else node

    @property
    def complete(self) -> bool:
        return self.node.item is not None

    @property
    def flat(self) -> bool:
        return self.leaves is not None

    @property
    def score(self) -> float:
        if self.leaves is not None:
            return self.leaves[self.first].score
        return self.node.score if self.first == 0 else self.node.children[self.first].score

    def seen(self) -> "Tail":
        """The tail as a rescored edge sees it: its own node's words."""
        return Tail(self.node, self.first, self.leaves)


class IncrementalReferenceDecoder(ReferenceDecoder):
    """ReferenceDecoder's search space and hypergraph, filled by incremental search.

    pop_limit: complete hypotheses per cell and round (0: no limit, the exhaustive hypergraph).
    pop_count (decoder.settings.ExperimentalSettings.pop_count): "all", one queue per cell and round whose
    pop_limit counts every complete hypothesis; or "real", the entries of rules with a virtual lhs (the
    binarization's partial rules) in a queue of their own first, with virtual_pop_limit complete
    hypotheses (0: no limit), then the others (real lhs, glue, GOAL) in one with pop_limit.
    flat_items: a tail whose node has at most this many items is split last, item by item (0: off; the
    compiled search's constructor argument of that name, whose default is _incremental.FLAT_ITEMS).
    queue_pops: per queue run of the last decode, (pop_count kind: "all", "virtual" or "real", the
    limit, complete hypotheses made), in order; queue_pop_scores: per queue run, the scores of its
    complete pops, in order; partial_pops: the queue pops of the last decode (partial and complete)."""

    def __init__(self, grammar, lm, weights, space=None, pop_limit: int = 0, pop_count: str = "all",
                 virtual_pop_limit: int = 0, flat_items: int = 0):
        super().__init__(grammar, lm, weights, space)
        if pop_count not in ("all", "real"):
            raise ValueError(f"pop_count must be 'all' or 'real', not {pop_count!r}")
        self.pop_limit = pop_limit
        self.pop_count = pop_count
        self.virtual_pop_limit = virtual_pop_limit
        self.flat_items = flat_items
        self.queue_pops: list = []
        self.queue_pop_scores: list = []
        self.partial_pops = 0
        self._rule_scores: dict = {}

    # ---- partial edges

    def _rule_score(self, rule) -> float:
        key = id(rule)
        if key not in self._rule_scores:
            self._rule_scores[key] = self.weights.dot(self.rule_features(rule))
        return self._rule_scores[key]

    def _lm_estimate(self, kind, tails: tuple, words_only: bool = False) -> float:
        """log10 of the n-grams whose words the tails reveal (kind: a rule, "glue-start" or "glue-concat");
        words_only: the tails that are not items reveal nothing."""
        blocks = []
        for tail in tails:
            if tail is not None:
                n_blocks = len(self._vertex_blocks(tail.node))
                if words_only and not tail.complete:
                    blocks.extend([(STAR,)] * n_blocks)
                else:
                    blocks.extend(partial_contexts(tail.shown, n_blocks))
        if kind == "glue-start":  # <s> X
            return complete_ngrams((BOS,) + blocks[0], self.lm, scored=1)
        if kind == "glue-concat":
            return complete_ngrams(blocks[0] + blocks[1], self.lm, scored=len(blocks[0]))
        elif kind.target is None:
            return 0.0
        else:
            sequence = ()
            for piece in kind.target:
                sequence += (piece,) if isinstance(piece, str) else blocks[piece]
        return complete_ngrams(sequence, self.lm)

    @staticmethod
    def _vertex_blocks(node: TrieNode) -> tuple:
        """Any item below node (all items of a vertex carry the same number of blocks)."""
        while node.item is None:
            node = node.children[0]
        return node.item.contexts

    def _partial(self, fixed: float, kind, tails: tuple, words_only: bool = False):
        score = fixed + sum(t.score for t in tails if t is not None)
        if kind in ("glue-start", "glue-concat") or (kind != "oov" and kind.target is not None):
            score += self.weights[LM] * self._lm_estimate(kind, tails, words_only)
        return score

    def _makes_virtual(self, kind) -> bool:
        """Whether an entry's kind (a rule, or "glue-start", "glue-concat") makes a virtual item."""
        return not isinstance(kind, str) and kind.lhs not in self.real_labels

    def _search_queue(self, entries: list, add_complete) -> int:
        """Search one cell's (one unary round's) entries: (fixed score, kind, tails as Tail or None).
        add_complete(kind, tail nodes) makes the exact edge. pop_count "all": one queue with pop_limit;
        "real": the virtual entries' queue with virtual_pop_limit, then the real entries' with pop_limit
        (a virtual item made here is never a tail of an entry of the same cell and round). Returns
        complete hypotheses made."""
        if self.pop_count == "all":
            return self._run_queue(entries, add_complete, self.pop_limit, "all")
        virtual = [entry for entry in entries if self._makes_virtual(entry[1])]
        real = [entry for entry in entries if not self._makes_virtual(entry[1])]
        return (self._run_queue(virtual, add_complete, self.virtual_pop_limit, "virtual")
                + self._run_queue(real, add_complete, self.pop_limit, "real"))

    def _run_queue(self, entries: list, add_complete, limit: int, kind_of_pops: str) -> int:
        """One queue over `entries` until `limit` complete hypotheses (0: no limit); recorded in queue_pops."""
        if not entries:
            return 0
        counter = itertools.count()
        queue = []
        for fixed, kind, tails in entries:
            estimated = any(t is not None and not t.complete for t in tails)  # tails at their roots
            heapq.heappush(queue, (-self._partial(fixed, kind, tails, estimated), next(counter), fixed, kind, tails,
                                   estimated))
        scores = []
        while queue and (limit <= 0 or len(scores) < limit):
            key, _, fixed, kind, tails, estimated = heapq.heappop(queue)
            self.partial_pops += 1
            open_tails = [p for p, t in enumerate(tails) if t is not None and not t.complete]
            if not open_tails:  # (its key is its exact score)
                add_complete(kind, tuple(t.node.item if t is not None else None for t in tails))
                scores.append(-key)
                continue
            # Refine the most general context: the tail with the fewest revealed words (a flat or small one last).
            p = min(open_tails, key=lambda q: (self._splits_flat(tails[q]), len(tails[q].node.revealed)))
            tail = tails[p]
            if self._splits_flat(tail) and not tail.flat:
                tail = Tail(tail.node, 0, tail.node.leaves())
            if tail.flat:
                # An item of a flat tail: the edge keeps the node's estimate until complete (then exact).
                best = tails[:p] + (Tail(tail.leaves[tail.first], shown=tail.node),) + tails[p + 1:]
                if estimated or all(t is None or t.complete for t in best):  # (rescored: words-only, or exact)
                    best = tuple(t.seen() if t is not None else None for t in best)
                n_alternatives = len(tail.leaves)
            else:  # (a refinement: the edge rescored over every tail's own words)
                best = tuple(t.seen() if t is not None else None
                             for t in tails[:p] + (Tail(tail.node.children[tail.first]),) + tails[p + 1:])
                n_alternatives = len(tail.node.children)
            heapq.heappush(queue, (-self._partial(fixed, kind, best), next(counter), fixed, kind, best, False))
            if tail.first + 1 < n_alternatives:
                # The rest of the node's children (items) reveal what the node does: the same estimate.
                rest = tails[:p] + (Tail(tail.node, tail.first + 1, tail.leaves, tail.shown),) + tails[p + 1:]
                heapq.heappush(queue, (-self._partial(fixed, kind, rest, estimated), next(counter), fixed, kind, rest,
                                       estimated))
        self.queue_pops.append((kind_of_pops, limit, len(scores)))
        self.queue_pop_scores.append(scores)
        return len(scores)

    def _splits_flat(self, tail: Tail) -> bool:
        """Whether a tail is split item by item (flat, or its node has at most flat_items items)."""
        return tail.flat or 0 < tail.node.n_items <= self.flat_items

    # ---- the chart

    def decode(self, words, k: int = 1) -> ReferenceResult:
        self.queue_pops = []
        self.queue_pop_scores = []
        self.partial_pops = 0
        words = list(words)
        n = len(words)
        space = self.space
        vertices: dict = {}   # (i, j) -> {symbol: trie root}, what parents use
        goal_tries: dict = {}  # j -> trie of GOAL items over [0, j)
        goal_items: dict = {}
        proposed = [0]
        n_nodes = 0

        def options(i, j):
            out = []
            run = tuple(words[i:j])
            if run in self.runs:
                out.append((run, None))
            for symbol, root in vertices.get((i, j), {}).items():
                out.append((symbol, Tail(root)))
            return out

        for length in range(1, n + 1):
            for i in range(0, n - length + 1):
                j = i + length
                if length <= space.max_span:
                    visible: list = []
                    round_nodes: dict = {}

                    def add_to(nodes, round_key):
                        def add_complete(kind, tail_items):
                            proposed[0] += 1
                            contexts, edge = self.apply(kind, tail_items)
                            key = (kind.lhs, contexts)
                            nodes.setdefault(key, Node(kind.lhs, (i, j), contexts)).add(edge)
                        return add_complete

                    entries: list = []
                    if length == 1 and (words[i],) not in self.lexical:
                        for label in space.oov_labels:  # no LM inside one word, nothing to expand
                            features = {OOV: 1.0, WORD_COUNT: 1.0}
                            node = round_nodes.setdefault((label, ((words[i],),)), Node(label, (i, j), ((words[i],),)))
                            node.add(self._edge(features, (), ("oov", words[i])))
                            proposed[0] += 1
                    for rule in self.lexical.get(tuple(words[i:j]), ()):
                        entries.append((self._rule_score(rule), rule, (None,)))
                    for split in range(i + 1, j):
                        for left_symbol, left in options(i, split):
                            for right_symbol, right in options(split, j):
                                for rule in self.binary.get((left_symbol, right_symbol), ()):
                                    entries.append((self._rule_score(rule), rule, (left, right)))
                    self._search_queue(entries, add_to(round_nodes, 0))
                    visible.extend(round_nodes.values())
                    frontier = round_nodes
                    for unary_round in range(1, space.max_unary_depth + 1):
                        by_symbol: dict = {}
                        for node in frontier.values():
                            by_symbol.setdefault(node.symbol, []).append(node)
                        new_nodes: dict = {}
                        entries = []
                        for symbol, nodes in by_symbol.items():
                            root = build_trie(nodes)
                            for rule in self.unary.get(symbol, ()):
                                entries.append((self._rule_score(rule), rule, (Tail(root),)))
                        self._search_queue(entries, add_to(new_nodes, unary_round))
                        n_nodes += len(new_nodes)
                        visible.extend(new_nodes.values())
                        frontier = new_nodes
                        if not frontier:
                            break
                    n_nodes += len(round_nodes)
                    by_symbol = {}
                    for node in visible:
                        by_symbol.setdefault(node.symbol, []).append(node)
                    vertices[(i, j)] = {symbol: build_trie(nodes) for symbol, nodes in by_symbol.items()}
                if i == 0:
                    goal_nodes: dict = {}
                    entries = []
                    for symbol, root in vertices.get((0, j), {}).items():
                        value = space.glue.start_value(symbol) if symbol in self.real_labels else None
                        if value is not None:
                            entries.append((self.weights[GLUE] * value, "glue-start", (Tail(root),)))
                    for split in range(1, j):
                        if split not in goal_tries:
                            continue
                        for symbol, root in vertices.get((split, j), {}).items():
                            value = space.glue.concat_value(symbol) if symbol in self.real_labels else None
                            if value is not None:
                                entries.append((self.weights[GLUE] * value, "glue-concat",
                                                (Tail(goal_tries[split]), Tail(root))))

                    def add_goal(kind, tail_items, j=j):
                        proposed[0] += 1
                        if kind == "glue-start":
                            (node,) = tail_items
                            lm, context = sentence_start(node.contexts[0], self.lm)
                            edge = self._edge({GLUE: space.glue.start_value(node.symbol), LM: lm}, (node,),
                                              ("glue-start",))
                        else:
                            goal, node = tail_items
                            lm, context = glue_concatenation(goal.contexts[0], node.contexts[0], self.lm)
                            features = {GLUE: space.glue.concat_value(node.symbol), LM: lm}
                            edge = self._edge(features, (goal, node), ("glue-concat",))
                        contexts = (context,)
                        goal_nodes.setdefault(contexts, Node(GOAL, (0, j), contexts)).add(edge)

                    self._search_queue(entries, add_goal)
                    if goal_nodes:
                        goal_items[j] = list(goal_nodes.values())
                        goal_tries[j] = build_trie(goal_items[j])
                    n_nodes += len(goal_nodes)

        roots = []
        for node in goal_items.get(n, []):
            roots.append((node, sentence_end(node.contexts[0], self.lm)))
        kbest = self._kbest(roots, k) if n else []
        return ReferenceResult(kbest[0] if kbest else None, kbest, proposed[0], n_nodes)
