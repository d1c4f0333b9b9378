"""The compiled CKY decoder's Python side: grammar arrays, derivations, k-best.

`ChartDecoder(store, lm, weights, space, ...)` prepares, once, what the compiled
search (decoder._ext._chart.ChartSearch) reads: rule scores (weights . features +
word-count weight * target words), target sides in KenLM ids, each key's rules
sorted best first, dense per-symbol look-up offsets, glue values. `search(words)`
fills the chart for a sentence and returns a `SearchResult`, from which the best
derivation or the k best (Huang and Chiang 2005, Algorithm 3, lazily) are read
back as `Hypothesis` objects with text, target tree, features and derivation.
"""
from __future__ import annotations

import functools
import heapq
import re
import time
from dataclasses import dataclass, field

import numpy as np

from decoder._ext import compiled_module

from ..grammar import unescape_word
from .model import GLUE, GOAL, LM, OOV, WORD_COUNT, SearchSpace, Weights

_chart = compiled_module("_chart")
ChartSearch, sort_rules_by_score, target_hashes = _chart.ChartSearch, _chart.sort_rules_by_score, _chart.target_hashes

EDGE_OOV, EDGE_GLUE_START, EDGE_GLUE_CONCAT = -1, -2, -3

@dataclass
class Hypothesis:
    """One complete derivation read back from the chart."""

    score: float
    text: str
    words: list
    tree: str
    features: dict
    derivation: dict


@dataclass
class SearchResult:
    n_words: int
    roots: np.ndarray        # GOAL items over the sentence
    root_boundary: np.ndarray  # their <s> ... </s> LM scores
    chart: dict              # ChartSearch.export()
    stats: dict = field(default_factory=dict)


class ChartDecoder:
    """The compiled search over one grammar store and one KenLM model."""

    def __init__(self, store, lm, weights: Weights, space: SearchSpace | None = None, *, pop_limit: int = 100,
                 beam_size: int = 0, beam_threshold: float = 0.0, exhaustive: bool = False):
        self.store = store
        self.lm = lm
        self.weights = weights
        self.space = space or SearchSpace()
        n_nt, n_symbols = store.n_nonterminals, store.n_symbols
        self.n_symbols = n_symbols

        # Symbols: the store's, then unknown-word labels the grammar lacks, then GOAL.
        # (The store's names are read on first use: derivations need them, the search does not.)
        self.symbol_names = _SymbolNames(store)
        real_ids = store.real_label_ids
        oov_symbols = []
        extra = 0
        for label in self.space.oov_labels:
            if label in real_ids:
                oov_symbols.append(real_ids[label])
            else:
                oov_symbols.append(n_symbols + extra)
                self.symbol_names[n_symbols + extra] = label
                extra += 1
        self.goal_symbol = n_symbols + extra
        self.symbol_names[self.goal_symbol] = GOAL
        n_all = self.goal_symbol + 1
        is_real = np.zeros(n_all, dtype=np.uint8)
        is_real[:n_nt] = 1 - np.asarray(store.symbol_is_virtual, dtype=np.uint8)
        is_real[n_symbols:self.goal_symbol] = 1
        glue_start = np.full(n_all, np.nan)
        glue_concat = np.full(n_all, np.nan)
        for symbol in np.flatnonzero(is_real):
            name = self.symbol_names.real_name(int(symbol))
            start, concat = self.space.glue.start_value(name), self.space.glue.concat_value(name)
            glue_start[symbol] = np.nan if start is None else start
            glue_concat[symbol] = np.nan if concat is None else concat
        self.glue_start = glue_start
        self.glue_concat = glue_concat

        # Rule scores: weights . features of the source rule (top rules) + word-count weight * target words.
        feature_weights = np.array([weights[name] for name in store.feature_names], dtype=np.float64)
        source_scores = (np.asarray(store.features) @ feature_weights.astype(np.float32)).astype(np.float64) \
            if len(feature_weights) else np.zeros(store.n_source_rules)
        origin = np.asarray(store.rule_origin)
        target = np.asarray(store.rule_target)
        offsets = np.asarray(store.rule_target_offsets)
        is_word = np.zeros(len(target) + 1, dtype=np.int64)
        np.cumsum(target >= 0, out=is_word[1:])
        self.rule_word_count = (is_word[offsets[1:]] - is_word[offsets[:-1]]).astype(np.int32)
        rule_score = np.where(origin >= 0, source_scores[np.maximum(origin, 0)] if len(source_scores) else 0.0, 0.0)
        rule_score = rule_score + weights[WORD_COUNT] * self.rule_word_count
        self.rule_score = np.ascontiguousarray(rule_score, dtype=np.float64)

        # Rule-table words are escaped (decoder.grammar.escape_word); the LM knows them plain.
        lm_ids = lm.vocab_indices([unescape_word(w) for w in store.target_vocab]).astype(np.int32)
        rule_target_lm = np.where(target >= 0, lm_ids[np.maximum(target, 0)] if len(lm_ids) else 0, target)
        rule_target_lm = np.ascontiguousarray(rule_target_lm, dtype=np.int32)

        pair_keys = np.asarray(store.pair_keys)
        pair_offsets = np.asarray(store.pair_offsets)
        pair_rules = np.asarray(store.pair_rules)
        pair_rules_sorted = sort_rules_by_score(pair_rules, pair_offsets, self.rule_score)
        single_keys = np.asarray(store.single_keys)
        single_offsets = np.asarray(store.single_offsets)
        single_rules = np.asarray(store.single_rules)
        single_rules_sorted = sort_rules_by_score(single_rules, single_offsets, self.rule_score)
        all_symbols = np.arange(n_all, dtype=np.int64)
        index = np.searchsorted(single_keys, all_symbols)
        present = (index < len(single_keys)) & (single_keys[np.minimum(index, max(len(single_keys) - 1, 0))] == all_symbols) \
            if len(single_keys) else np.zeros(n_all, bool)
        self.single_lo = np.where(present, single_offsets[np.minimum(index, len(single_offsets) - 1)], 0).astype(np.int64)
        self.single_hi = np.where(present, single_offsets[np.minimum(index + 1, len(single_offsets) - 1)], 0).astype(np.int64)
        pair_left_offsets = np.searchsorted(pair_keys, np.arange(n_symbols + 1, dtype=np.int64) * n_symbols).astype(np.int64)

        self._arrays = dict(
            rule_lhs=np.ascontiguousarray(store.rule_lhs, dtype=np.int32),
            rule_carries=np.ascontiguousarray(store.rule_carries, dtype=np.uint8),
            rule_target_offsets=np.ascontiguousarray(offsets, dtype=np.int64),
            rule_target_lm=rule_target_lm,
            rule_score=self.rule_score,
            rule_target_hash=target_hashes(rule_target_lm, offsets),
            pair_keys=np.ascontiguousarray(pair_keys, dtype=np.int64),
            pair_offsets=np.ascontiguousarray(pair_offsets, dtype=np.int64),
            pair_rules_sorted=np.ascontiguousarray(pair_rules_sorted, dtype=np.int32),
            pair_left_offsets=pair_left_offsets,
            single_lo=self.single_lo,
            single_hi=self.single_hi,
            single_rules_sorted=np.ascontiguousarray(single_rules_sorted, dtype=np.int32),
            symbol_is_real=is_real,
            glue_start_value=glue_start,
            glue_concat_value=glue_concat,
            oov_symbols=np.array(oov_symbols, dtype=np.int32),
        )
        self.search_engine = ChartSearch(self._arrays, lm, n_symbols, self.goal_symbol)
        self.configure(pop_limit=pop_limit, beam_size=beam_size, beam_threshold=beam_threshold,
                       exhaustive=exhaustive)
        self._fragments: dict = {}
        self._targets: dict = {}

    def configure(self, *, pop_limit=None, beam_size=None, beam_threshold=None, exhaustive=None,
                  max_span=None, max_unary_depth=None, unary_pop_limit=None):
        engine = self.search_engine
        engine.weight_lm = self.weights[LM]
        engine.weight_oov = self.weights[OOV]
        engine.weight_glue = self.weights[GLUE]
        engine.weight_word_count = self.weights[WORD_COUNT]
        engine.max_span = self.space.max_span if max_span is None else max_span
        engine.max_unary_depth = self.space.max_unary_depth if max_unary_depth is None else max_unary_depth
        if pop_limit is not None:
            engine.pop_limit = int(pop_limit)
        if unary_pop_limit is not None:
            engine.unary_pop_limit = int(unary_pop_limit)  # -1: the pop limit
        if beam_size is not None:
            engine.beam_size = int(beam_size)
        if beam_threshold is not None:
            engine.beam_threshold = float(beam_threshold)
        if exhaustive is not None:
            engine.exhaustive = bool(exhaustive)

    # ------------------------------------------------------------------ search

    def search(self, words) -> SearchResult:
        started = time.perf_counter()
        words = list(words)
        n = len(words)
        word_ids = self.store.source_word_ids(words)
        runs = np.asarray(self.store.match_run_array(word_ids), dtype=np.int32).reshape(-1, 3)
        oov_at = np.ones(n, dtype=np.uint8)
        for start, end, symbol in runs.tolist():
            if end - start == 1 and self.single_hi[symbol] > self.single_lo[symbol]:
                oov_at[start] = 0
        words_lm = (self.lm.vocab_indices([unescape_word(w) for w in words]).astype(np.int32) if n
                    else np.zeros(0, np.int32))
        engine = self.search_engine
        engine.decode(words_lm, runs, oov_at)
        roots, boundary = engine.roots()
        chart = engine.export()
        items_in_cells = engine.items_per_cell()
        stats = {
            "words": n,
            "edges_proposed": int(engine.edges_proposed),
            "edges_kept": int(engine.edges_kept),
            "lm_queries": int(engine.lm_queries),
            "lm_queries_novel": int(engine.lm_queries_novel),
            "items": int(engine.n_items),
            "edges": int(engine.n_edges),
            "items_per_cell": _items_per_cell_by_span(items_in_cells, min(n, engine.max_span)),
            "chart_cells": _chart_cells(items_in_cells, chart, self.goal_symbol),
            "search_seconds": time.perf_counter() - started,
        }
        return SearchResult(n, roots, boundary, chart, stats)

    # ------------------------------------------------------------------ derivations

    def best(self, result: SearchResult, words) -> Hypothesis | None:
        if len(result.roots) == 0:
            return None
        chart = result.chart
        finals = chart["item_score"][result.roots] + self.weights[LM] * result.root_boundary
        r = int(np.argmax(finals))

        def best_tree(item):
            edge = int(chart["item_best_edge"][item])
            return (edge, [best_tree(t) for t in self._tails(chart, edge)])

        return self._hypothesis(result, words, float(finals[r]), float(result.root_boundary[r]),
                                best_tree(int(result.roots[r])))

    def kbest(self, result: SearchResult, words, k: int, unique: bool = True,
              max_derivations: int | None = None) -> list[Hypothesis]:
        """The k best derivations (unique: the k best distinct translations, among at most
        `max_derivations` derivations, 50 * k by default), best first."""
        if len(result.roots) == 0 or k <= 0:
            return []
        chart = {name: values.tolist() for name, values in result.chart.items()}
        finder = _LazyKBest(chart, result.roots.tolist(), (self.weights[LM] * result.root_boundary).tolist(),
                            self._tails, functools.partial(self._edge_blocks, chart, words))
        out, seen = [], set()
        limit = max_derivations if max_derivations is not None else (50 * k if unique else k)
        for rank in range(limit):
            found = finder.kth_root(rank)
            if found is None:
                break
            score, root_index, root_rank = found
            if unique:
                text = " ".join(finder.blocks(finder.roots[root_index], root_rank)[0])
                if text in seen:
                    continue
                seen.add(text)
            tree = finder.tree(finder.roots[root_index], root_rank)
            out.append(self._hypothesis(result, words, score, float(result.root_boundary[root_index]), tree))
            if len(out) >= k:
                break
        return out

    def _rule_target(self, rule: int) -> tuple:
        target = self._targets.get(rule)
        if target is None:
            lo, hi = int(self.store.rule_target_offsets[rule]), int(self.store.rule_target_offsets[rule + 1])
            vocab = self.store.target_vocab
            target = tuple(vocab[t] if t >= 0 else t for t in self.store.rule_target[lo:hi].tolist())
            self._targets[rule] = target
        return target

    def _edge_blocks(self, chart, words, edge: int, tail_blocks: list) -> tuple:
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

    @staticmethod
    def _tails(chart, edge: int) -> list[int]:
        if chart["edge_rule"][edge] == EDGE_OOV:
            return []
        return [int(t) for t in (chart["edge_tail0"][edge], chart["edge_tail1"][edge]) if t >= 0]

    def _hypothesis(self, result: SearchResult, words, score: float, boundary: float, tree) -> Hypothesis:
        """Text, target tree, features and derivation of a derivation tree (edge, [subtrees])."""
        store, chart, n1 = self.store, result.chart, result.n_words + 1
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
        return Hypothesis(score, " ".join(output), output, tree_text, features, derivation)

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


class _SymbolNames:
    """Symbol id -> name: the store's nonterminals (read on first use), then the extra labels and GOAL."""

    def __init__(self, store):
        self.store = store
        self.extra: dict = {}
        self._real = None

    def real_name(self, symbol: int) -> str:
        if symbol in self.extra:
            return self.extra[symbol]
        if self._real is None:
            self._real = {i: name for name, i in self.store.real_label_ids.items()}
        return self._real[symbol]

    def __setitem__(self, symbol: int, name: str):
        self.extra[symbol] = name

    def __getitem__(self, symbol: int) -> str:
        if symbol in self.extra:
            return self.extra[symbol]
        if symbol < self.store.n_real_nonterminals:
            return self.real_name(symbol)
        return self.store.nonterminal_names[symbol]  # a virtual symbol: all names are read once

    def get(self, symbol: int, default=None):
        try:
            return self[symbol]
        except (IndexError, KeyError):
            return default


_NONTERMINAL_LEAF = re.compile(r"\[[^\s\[\]]+\]")


def _words_of(pieces) -> list:
    out = []
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        else:
            out.extend(p[1])
    return out


def _items_per_cell_by_span(counts: np.ndarray, max_length: int) -> dict:
    """{span length: [mean, variance]} of the items left per cell (Xiao et al. Figures 11-12)."""
    n = counts.shape[0] - 1
    out = {}
    for length in range(1, max_length + 1):
        values = np.array([counts[i, i + length] for i in range(0, n - length + 1)], dtype=np.float64)
        if len(values):
            out[length] = [float(values.mean()), float(values.var())]
    return out


def _chart_cells(items_in_cells: np.ndarray, chart: dict, goal_symbol: int) -> list:
    """[[start, length, items, edges], ...] for every cell holding an item: the items left after
    pruning and the edges into them (GOAL items and their edges not counted), for heat maps."""
    n1 = items_in_cells.shape[0]
    heads = chart["edge_head"]
    kept = (chart["item_alive"][heads] != 0) & (chart["item_symbol"][heads] != goal_symbol)
    edges_in_cells = np.bincount(chart["item_cell"][heads[kept]], minlength=n1 * n1).reshape(n1, n1)
    starts, ends = np.nonzero(items_in_cells)
    return [[int(i), int(j - i), int(items_in_cells[i, j]), int(edges_in_cells[i, j])]
            for i, j in zip(starts.tolist(), ends.tolist())]


class _LazyKBest:
    """Huang and Chiang (2005), Algorithm 3, over the exported chart (as lists).

    A derivation of item v is (score, edge, ranks): the edge into v and, per tail,
    the rank of the tail's derivation used. The root is a virtual node whose edges
    are the GOAL items over the sentence, each with its sentence-boundary LM score.
    """

    def __init__(self, chart: dict, roots: list, root_extra: list, tails_of, edge_blocks):
        self.chart = chart
        self.tails_of = tails_of
        self.edge_blocks = edge_blocks
        self.derivations: dict = {}   # item -> list of (score, edge, ranks)
        self.candidates: dict = {}    # item -> heap of (-score, edge, ranks)
        self.seen: dict = {}
        self.memo_blocks: dict = {}   # (item, rank) -> target blocks
        self.root_extra = root_extra
        self.roots = roots
        self.root_derivations: list = []
        self.root_candidates = [(-(chart["item_score"][r] + root_extra[i]), i, 0) for i, r in enumerate(roots)]
        heapq.heapify(self.root_candidates)

    def _score_of(self, item: int, rank: int) -> float | None:
        if rank == 0 and item not in self.derivations:
            return self.chart["item_score"][item]
        self._fill(item, rank + 1)
        ds = self.derivations[item]
        return ds[rank][0] if rank < len(ds) else None

    def _init(self, item: int):
        chart = self.chart
        heap = []
        edge = chart["item_first_edge"][item]
        while edge >= 0:
            tails = self.tails_of(chart, edge)
            score = chart["edge_score"][edge] + sum(chart["item_score"][t] for t in tails)
            heap.append((-score, edge, (0,) * len(tails)))
            edge = chart["edge_next"][edge]
        heapq.heapify(heap)
        self.candidates[item] = heap
        self.derivations[item] = []
        self.seen[item] = {(e, r) for _, e, r in heap}

    def _fill(self, item: int, k: int):
        if item not in self.derivations:
            self._init(item)
        ds, heap = self.derivations[item], self.candidates[item]
        while len(ds) < k:
            if ds:
                _, edge, ranks = ds[-1]
                self._push_next(item, edge, ranks)
            if not heap:
                break
            neg, edge, ranks = heapq.heappop(heap)
            ds.append((-neg, edge, ranks))

    def _push_next(self, item: int, edge: int, ranks: tuple):
        tails = self.tails_of(self.chart, edge)
        for t in range(len(tails)):
            new_ranks = ranks[:t] + (ranks[t] + 1,) + ranks[t + 1:]
            if (edge, new_ranks) in self.seen[item]:
                continue
            scores = [self._score_of(tails[u], new_ranks[u]) for u in range(len(tails))]
            if any(s is None for s in scores):
                continue
            self.seen[item].add((edge, new_ranks))
            heapq.heappush(self.candidates[item], (-(self.chart["edge_score"][edge] + sum(scores)), edge, new_ranks))

    def tree(self, item: int, rank: int):
        """The derivation as (edge, [subtrees])."""
        self._fill(item, rank + 1)
        _, edge, ranks = self.derivations[item][rank]
        tails = self.tails_of(self.chart, edge)
        return (edge, [self.tree(t, r) for t, r in zip(tails, ranks)])

    def blocks(self, item: int, rank: int) -> tuple:
        """The target blocks of a derivation (memoized: derivations share their parts)."""
        key = (item, rank)
        cached = self.memo_blocks.get(key)
        if cached is None:
            self._fill(item, rank + 1)
            _, edge, ranks = self.derivations[item][rank]
            tails = self.tails_of(self.chart, edge)
            cached = self.edge_blocks(edge, [self.blocks(t, r) for t, r in zip(tails, ranks)])
            self.memo_blocks[key] = cached
        return cached

    def kth_root(self, k: int):
        """(score, root index, rank of the root item's derivation) of the k-th best derivation, or None."""
        while len(self.root_derivations) <= k:
            if self.root_derivations:
                _, index, rank = self.root_derivations[-1]
                next_score = self._score_of(self.roots[index], rank + 1)
                if next_score is not None:
                    heapq.heappush(self.root_candidates, (-(next_score + self.root_extra[index]), index, rank + 1))
            if not self.root_candidates:
                return None
            neg, index, rank = heapq.heappop(self.root_candidates)
            self.root_derivations.append((-neg, index, rank))
        return self.root_derivations[k]
