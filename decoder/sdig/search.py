"""The SDIG decoder's search (section 4): a top-down dynamic program over the ET
decompositions of the input dependency tree, packed in a forest.

Forest: for every input node v, the ETs rooted at v that the grammar knows (connected sets
of at most `grammar.max_source_words` nodes, found by `rooted_subsets`, kept when their key
is a source ET of the grammar) plus, always, v's single word (a Model 1 word ET, or else a
pass-through of the unknown word). Choosing an ET at v leaves its attachment nodes (the
input nodes outside it whose head is inside) to be decomposed the same way.

Model (log-linear; the paper's model is tm_fe + transition with weight 1, no LM):

    tm_fe       log P(u | v): source ET u given its English ET v (the "emission")
    tm_ef       log P(v | u)
    transition  log P(root(v) | root(Parent(v))): English root-word transition; the root
                ET's parent is "<root>"
    model1_et   number of Model 1 word-pair ETs used
    et_count    number of ETs
    word_count  number of English words
    oov         number of unknown words passed through
    lm          log10 LM probability of the output with <s> and </s> (0 without an LM)

Since every feature but lm adds up over the ETs, and the transition only needs the
parent's English root word, best(v, r) = the best derivations of v's subtree under a parent
whose English root is r is a Viterbi recursion on (v, r), top down from (root, "<root>").
Children ETs keep their source order, left or right of their parent ET's English words as
they are left or right of its root in the input (all ETs attach at their root nodes).

With `reorder`, the child order model of the grammar (grammar.order_swaps, learned from the
training partitions) moves a child ET to the other side of its parent when, for its Spanish
dependency relation and side, the English side was the other one in most training cases.

Each (v, r) keeps a list of its `beam_size` best hypotheses. Without an LM, the lists
combine exactly (scores add), so beam 1 is the paper's Viterbi search and beam k gives the
exact k best. With an LM (KenLM's chart-state scoring, the same compiled scorer as the CKY
decoder), combinations are ranked by their score without the new LM terms, the best
`beam_size` of each ET translation are LM-scored, and the best `beam_size` overall are
kept: a beam search.

`Search.search` runs this program compiled (decoder._ext._sdig, ext/_sdig.pyx: the forest as
flat integer arrays, nogil); `Search.search_reference` is the pure-Python program the tests
hold it to (same hypotheses, scores, features and derivations: stable sorts, same sums).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .deptree import DepTree
from .elementary import et_key, parse_key, rooted_subsets
from .grammar import MODEL1, Grammar

ROOT = "<root>"
FEATURES = ("tm_fe", "tm_ef", "transition", "model1_et", "et_count", "word_count", "oov", "lm")
DEFAULT_WEIGHTS = {"tm_fe": 1.0, "tm_ef": 0.0, "transition": 1.0, "model1_et": 0.0, "et_count": 0.0,
                   "word_count": 0.0, "oov": -10.0, "lm": 0.0}
# Features MERT leaves at their default weights (cky train --system sdig, python -m decoder.sdig tune;
# docs/sdig.md tunes with `cky tune --fixed oov`): the pass-through penalty.
FIXED_IN_TUNING = ("oov",)
LM_INDEX = FEATURES.index("lm")
# decoder._ext._sdig.SdigSide: where a child ET goes (see Search._side)
SIDE_CODES = {"L": 0, "l": 1, "r": 2, "R": 3}


@dataclass
class Hypothesis:
    score: float
    features: tuple            # in FEATURES order
    words: tuple               # English words in output order
    heads: tuple               # per word: index of its head in `words`, -1 for the root
    lm_state: object           # PyChartState, or None without an LM
    derivation: dict           # {"source": key, "target": key, "kind": ..., "children": [...]}


def _order(sides: list[str], chosen: tuple) -> tuple[list, list]:
    """(children before, children after) their parent ET's English words: source order on each
    side; children moved by the order model sit next to the parent."""
    left = [h for side, h in zip(sides, chosen) if side == "L"] + [h for side, h in zip(sides, chosen) if side == "l"]
    right = [h for side, h in zip(sides, chosen) if side == "r"] + [h for side, h in zip(sides, chosen) if side == "R"]
    return left, right


class _Reachable:
    """children[n] restricted to the words in `companions`, computed for the nodes asked for only
    (rooted_subsets walks down from one node)."""

    __slots__ = ("kids", "words", "companions", "memo")

    def __init__(self, kids, words, companions):
        self.kids, self.words, self.companions, self.memo = kids, words, companions, {}

    def __getitem__(self, node: int) -> list[int]:
        found = self.memo.get(node)
        if found is None:
            found = self.memo[node] = [c for c in self.kids[node] if self.words[c] in self.companions]
        return found


@dataclass
class _Translation:
    """One option for the ET at a node: local features (transition 0: it depends on the
    parent), English words, heads, root index, and the weighted local score."""
    local: tuple
    words: list
    heads: list
    root: int
    source: str
    target: str
    kind: str
    score: float = 0.0
    id: int = -1          # its id in the compiled search's option table (-1: not there yet)


class Search:
    def __init__(self, grammar: Grammar, weights: dict | None = None, lm=None, beam_size: int = 1,
                 reorder: bool = False):
        self.grammar = grammar
        unknown = set(weights or {}) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown SDIG feature weights: {', '.join(sorted(unknown))} "
                             f"(features: {', '.join(FEATURES)})")
        merged = dict(DEFAULT_WEIGHTS, **(weights or {}))
        if lm is not None and "lm" not in (weights or {}):
            merged["lm"] = 1.0
        self.weight_vector = tuple(float(merged[name]) for name in FEATURES)
        self.lm = lm
        self.beam_size = max(1, int(beam_size))
        self.reorder = bool(reorder)
        self._targets: dict[str, tuple[list, list, int]] = {}
        self._options: dict[tuple, _Translation] = {}
        self._compiled = None          # decoder._ext._sdig.CompiledSearch, built on first use
        self._option_list: list[_Translation] = []   # by compiled option id
        self._word_ids: dict[str, int] = {}           # transition vocabulary
        self._pair_ids: dict[int, tuple[list, list[int]]] = {}

    def weights(self) -> dict:
        return dict(zip(FEATURES, self.weight_vector))

    def dot(self, features) -> float:
        return sum(w * f for w, f in zip(self.weight_vector, features) if w)

    # ---------------------------------------------------------------- forest

    def _target(self, key: str):
        cached = self._targets.get(key)
        if cached is None:
            words, heads = parse_key(key)
            cached = self._targets[key] = (words, heads, heads.index(-1))
        return cached

    def forest(self, tree: DepTree) -> tuple[list[list[tuple[tuple, list]]], list[list[int]]]:
        """options[v]: (ET nodes, [ETPair or None for a pass-through]) for each ET rooted at v."""
        kids = tree.children()
        options = []
        for v in range(len(tree)):
            found = []
            companions = self.grammar.companions.get(tree.words[v], ())
            reachable = _Reachable(kids, tree.words, companions)
            for nodes in rooted_subsets(v, reachable, self.grammar.max_source_words):
                pairs = self.grammar.by_source.get(et_key(tree, nodes))
                if pairs:
                    found.append((nodes, pairs))
            if not any(len(nodes) == 1 for nodes, _ in found):
                found.append(((v,), [None]))     # unknown word: passed through
            options.append(found)
        return options, kids

    # ---------------------------------------------------------------- search

    def search(self, tree: DepTree, k: int | None = None) -> tuple[list[Hypothesis], dict]:
        """The best hypotheses (best first) of a non-empty tree, and statistics: the compiled
        search (decoder._ext._sdig), the same program as search_reference."""
        compiled = self._compiled_search()
        options, kids = self.forest(tree)
        n = len(tree)
        node_shape_start, shape_child_start, children, sides, shape_option_start, option_ids = [0], [0], [], [], [0], []
        shape_sides: list[list[str]] = []
        for v in range(n):
            for nodes, pairs in options[v]:
                inside = set(nodes)
                attached = sorted(c for node in nodes for c in kids[node] if c not in inside)
                shape = [self._side(tree, c, v) for c in attached]
                shape_sides.append(shape)
                children.extend(attached)
                sides.extend(SIDE_CODES[side] for side in shape)
                shape_child_start.append(len(children))
                option_ids.extend(self._option_ids(pairs, tree.words[v]))
                shape_option_start.append(len(option_ids))
            node_shape_start.append(len(shape_child_start) - 1)
        depth = [0] * n
        for v in range(n):
            node, d = v, 0
            while tree.heads[node] != -1:
                node, d = tree.heads[node], d + 1
            depth[v] = d
        order = sorted(range(n), key=lambda v: -depth[v])   # children before their parents
        finals, counters = compiled.decode(order, node_shape_start, shape_child_start, children, sides,
                                           shape_option_start, option_ids, tree.root, self._word_id(ROOT), k or 1)
        stats = {"forest_nodes": sum(len(o) for o in options),
                 "et_options": sum(len(p) for o in options for _, p in o),
                 "states": counters["states"], "lm_calls": counters["lm_calls"]}
        built: dict[int, Hypothesis] = {}

        def hypothesis(entry: int) -> Hypothesis:
            found = built.get(entry)
            if found is None:
                score, transition, candidate, _ = compiled.entry(entry)
                option, shape, chosen, increment = compiled.candidate(candidate)
                found = built[entry] = self._assemble(score, self._option_list[option], transition, shape_sides[shape],
                                                      tuple(hypothesis(c) for c in chosen), increment, None)
            return found

        out = []
        for entry, score, features in finals:
            h = hypothesis(entry)
            out.append(Hypothesis(score, features, h.words, h.heads, None, h.derivation))
        return out, stats

    def _compiled_search(self):
        if self._compiled is None:
            from .._ext._sdig import CompiledSearch

            compiled = CompiledSearch(self.weight_vector, self.lm, self.beam_size)
            t = self.grammar.transitions
            for word in list(t.unigram) + list(t.by_parent):
                self._word_id(word, compiled)
            words = len(self._word_ids)
            unigram, totals, types = np.zeros(words, np.int64), np.zeros(words, np.int64), np.zeros(words, np.int64)
            for word, count in t.unigram.items():
                unigram[self._word_ids[word]] = count
            for parent, kids in t.by_parent.items():
                totals[self._word_ids[parent]] = t.parent_totals[parent]
                types[self._word_ids[parent]] = len(kids)
            pairs = [(self._word_ids[p], self._word_ids[c], count) for (p, c), count in t.counts.items()]
            compiled.set_transitions(t.total, t.vocabulary, unigram, totals, types,
                                     [p for p, _, _ in pairs], [c for _, c, _ in pairs], [c for _, _, c in pairs])
            self._compiled = compiled
        return self._compiled

    def _word_id(self, word: str, compiled=None) -> int:
        """The transition-vocabulary id of an English word (new words: never seen in the transitions)."""
        found = self._word_ids.get(word)
        if found is None:
            found = self._word_ids[word] = len(self._word_ids)
            if compiled is None:   # after set_transitions: grow the compiled tables (same ids)
                added = self._compiled.add_word()
                if added != found:
                    raise RuntimeError(f"transition vocabulary out of step: word id {found}, compiled {added}")
        return found

    def _option_ids(self, pairs: list, word: str) -> list[int]:
        """The compiled option ids of a grammar list of ET pairs (cached by the list's identity:
        the grammar's lists live as long as it) or of a pass-through ([None])."""
        if pairs[0] is None:
            return [self._option_id(None, word)]
        cached = self._pair_ids.get(id(pairs))
        if cached is None or cached[0] is not pairs:
            cached = self._pair_ids[id(pairs)] = (pairs, [self._option_id(pair, word) for pair in pairs])
        return cached[1]

    def _option_id(self, pair, word: str) -> int:
        option = self._option(pair, word)
        if option.id < 0:
            lm_ids = self.lm.vocab_indices(option.words).tolist() if self.lm is not None else [0] * len(option.words)
            option.id = self._compiled.add_option(lm_ids, self._word_id(option.words[option.root]), option.local,
                                                  option.score)
            self._option_list.append(option)
        return option.id

    def search_reference(self, tree: DepTree, k: int | None = None) -> tuple[list[Hypothesis], dict]:
        """The pure-Python dynamic program (what the compiled search is tested against): the best
        hypotheses (best first) of a non-empty tree, and statistics."""
        options, kids = self.forest(tree)
        beam = max(self.beam_size, k or 1)
        memo: dict[tuple[int, str], list[Hypothesis]] = {}
        stats = {"forest_nodes": sum(len(o) for o in options),
                 "et_options": sum(len(p) for o in options for _, p in o), "states": 0, "lm_calls": 0}

        transition = self.grammar.transitions.logprob
        w_transition = self.weight_vector[FEATURES.index("transition")]
        w_lm = self.weight_vector[LM_INDEX]

        inner_memo: dict[int, list] = {}

        def inner(v: int) -> list:
            """Candidates at v without their transition (which depends only on the parent's
            English root): light tuples (score, option, sides, children, LM increment, state),
            only assembled into hypotheses once they make a beam."""
            cached = inner_memo.get(v)
            if cached is not None:
                return cached
            candidates = []
            for nodes, pairs in options[v]:
                inside = set(nodes)
                attached = sorted(c for n in nodes for c in kids[n] if c not in inside)
                sides = [self._side(tree, c, v) for c in attached]
                for pair in pairs:
                    option = self._option(pair, tree.words[v])
                    root_word = option.words[option.root]
                    for score, chosen in self._combine(option.score, [best(c, root_word) for c in attached], beam):
                        increment, state = 0.0, None
                        if self.lm is not None:
                            left, right = _order(sides, chosen)
                            increment, state = self.lm.score_target(
                                [h.lm_state for h in left] + option.words + [h.lm_state for h in right])
                            stats["lm_calls"] += 1
                            score += w_lm * increment
                        candidates.append((score, option, sides, chosen, increment, state))
            inner_memo[v] = candidates
            return candidates

        def best(v: int, parent_root: str) -> list[Hypothesis]:
            key = (v, parent_root)
            cached = memo.get(key)
            if cached is not None:
                return cached
            stats["states"] += 1
            scored = []
            for candidate in inner(v):
                option = candidate[1]
                local_transition = transition(parent_root, option.words[option.root])
                scored.append((candidate[0] + w_transition * local_transition, local_transition, candidate))
            scored.sort(key=lambda item: -item[0])
            memo[key] = [self._assemble(score, candidate[1], t, *candidate[2:]) for score, t, candidate in scored[:beam]]
            return memo[key]

        hypotheses = best(tree.root, ROOT)
        if self.lm is not None:
            hypotheses = [self._with_boundaries(h, stats) for h in hypotheses]
            hypotheses.sort(key=lambda h: -h.score)
        return hypotheses[:k or 1], stats

    def _option(self, pair, word: str) -> _Translation:
        """The features (but the transition) and English side of an ET pair; None = pass-through."""
        key = (pair.source, pair.target) if pair is not None else (None, word)
        option = self._options.get(key)
        if option is None:
            if pair is None:
                local = (0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0)
                option = _Translation(local, [word], [-1], 0, f"{word}/0", f"{word}/0", "oov")
            else:
                words, heads, root = self._target(pair.target)
                local = (math.log(pair.p_source_given_target), math.log(pair.p_target_given_source), 0.0,
                         1.0 if pair.kind == MODEL1 else 0.0, 1.0, float(len(words)), 0.0, 0.0)
                option = _Translation(local, words, heads, root, pair.source, pair.target, pair.kind)
            option.score = self.dot(option.local)
            self._options[key] = option
        return option

    def _side(self, tree: DepTree, child: int, top: int) -> str:
        """Where a child ET goes: "L" (before its parent ET's English words), "R", or, with the
        order model, "l"/"r" for a child moved to the other side (placed next to the parent)."""
        side = "L" if child < top else "R"
        if self.reorder and self.grammar.order_swaps(tree.relations[child], side):
            return "r" if side == "L" else "l"
        return side

    @staticmethod
    def _combine(base: float, child_lists: list[list[Hypothesis]], beam: int) -> list[tuple[float, tuple]]:
        """The best `beam` combinations of one hypothesis per child by their additive score
        (exact without an LM: scores add)."""
        partials: list[tuple[float, tuple]] = [(base, ())]
        for hyps in child_lists:
            if len(hyps) == 1 and len(partials) == 1:
                partials = [(partials[0][0] + hyps[0].score, partials[0][1] + (hyps[0],))]
                continue
            merged = [(score + h.score, chosen + (h,)) for score, chosen in partials for h in hyps]
            merged.sort(key=lambda item: -item[0])
            partials = merged[:beam]
        return partials

    def _assemble(self, score: float, option: _Translation, local_transition: float, sides: list[str],
                  chosen: tuple, increment: float, state) -> Hypothesis:
        features = list(option.local)
        features[FEATURES.index("transition")] += local_transition
        features[LM_INDEX] += increment
        for h in chosen:
            for i, value in enumerate(h.features):
                features[i] += value
        words: list[str] = []
        heads: list[int] = []
        child_roots: list[int] = []

        def add_child(h: Hypothesis):
            offset = len(words)
            words.extend(h.words)
            heads.extend(-1 if x == -1 else x + offset for x in h.heads)
            child_roots.append(offset + h.heads.index(-1))

        left, right = _order(sides, chosen)
        for h in left:
            add_child(h)
        offset = len(words)
        words.extend(option.words)
        heads.extend(-1 if x == -1 else x + offset for x in option.heads)
        root = offset + option.root
        for h in right:
            add_child(h)
        for r in child_roots:
            heads[r] = root
        derivation = {"source": option.source, "target": option.target, "kind": option.kind,
                      "children": [h.derivation for h in chosen]}
        return Hypothesis(score, tuple(features), tuple(words), tuple(heads), state, derivation)

    def _with_boundaries(self, h: Hypothesis, stats: dict) -> Hypothesis:
        increment, state = self.lm.score_sentence_boundaries(h.lm_state)
        stats["lm_calls"] += 1
        features = list(h.features)
        features[LM_INDEX] += increment
        return Hypothesis(self.dot(features), tuple(features), h.words, h.heads, state, h.derivation)
