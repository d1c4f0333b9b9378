"""The search driver: one sentence through the compiled chart search, and its derivations read back.

    chart = ChartSearchDriver(store, lm, weights, space, SearchSettings(pop_limit=50))
    result = chart.run(words)                 # a SearchResult: the exported chart and statistics
    chart.best(result, words)                 # a ReadBack (decoder.search.readback), or None
    chart.kbest(result, words, 100)           # the 100 best, lazily (decoder.search.kbest, compiled)

The grammar arrays are prepared once (decoder.search.grammar_arrays); the
settings come from a `SearchSettings` (decoder.settings, the one home of their
defaults), given whole or as keywords.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np

from decoder._ext import compiled_module

from ..grammar import unescape_word
from ..settings import SearchSettings
from .grammar_arrays import GrammarArrays
from .kbest import CompiledKBest, ReferenceLazyKBest, kbest_derivations
from .model import GLUE, LM, OOV, WORD_COUNT, SearchSpace, Weights
from .readback import DerivationReader, ReadBack, best_derivation, edge_tails, preorder_edges

_chart = compiled_module("_chart")


@dataclass
class SearchResult:
    n_words: int
    roots: np.ndarray        # GOAL items over the sentence
    root_boundary: np.ndarray  # their sentence-end LM scores (</s>; <s> is scored at the glue start)
    chart: dict              # ChartSearch.export()
    stats: dict = field(default_factory=dict)


class ChartSearchDriver:
    """The compiled chart search over one grammar store and one KenLM model.

    The space's max_span and max_unary_depth are the defaults of the settings' (so
    a space alone, as the reference decoders take it, says the same search); given
    settings win, and the space is kept in step with them. `engine_options` are
    keyword arguments of the compiled engine's constructor beyond the settings
    (checks of an engine's shortcuts against its plain path, for the tests)."""

    algorithm = "cube"  # the `search` setting this driver implements (decoder.settings.SEARCH_ALGORITHMS)
    # Set to True to count, in the stats, the recombinations that only KenLM's state minimization allows
    # (`lm_state_minimized_recombinations`, ext/_chart.pyx): a measurement (bench.bench_search), not a
    # setting; it costs about 5% more instructions in the search.
    count_minimized_recombinations = False

    def __init__(self, store, lm, weights: Weights, space: SearchSpace | None = None,
                 settings: SearchSettings | None = None, *, engine_options: dict | None = None,
                 **setting_changes):
        self.engine_options = dict(engine_options or {})
        self.store = store
        self.lm = lm
        self.weights = weights
        space = space or SearchSpace()
        if settings is None:
            settings = SearchSettings(max_span=space.max_span, max_unary_depth=space.max_unary_depth)
        self.settings = settings.replace(**setting_changes)
        self.space = SearchSpace(max_span=self.settings.max_span, max_unary_depth=self.settings.max_unary_depth,
                                 oov_labels=space.oov_labels, glue=space.glue)
        self.kbest_finder = CompiledKBest(store)
        self._prepare_grammar()

    def _prepare_grammar(self) -> None:
        """The grammar arrays (with the settings' table limit) and the compiled search over them."""
        experimental = self.settings.experimental
        self.grammar = GrammarArrays(self.store, self.lm, self.weights, self.space, self.settings.table_limit,
                                     experimental.rule_order, experimental.weight_pushing,
                                     experimental.table_limit_rank, experimental.pop_count)
        self.reader = DerivationReader(self.store, self.weights, self.space, self.grammar)
        self.engine = self._new_engine()

    def _new_engine(self):
        """The compiled search over the grammar arrays (a subclass's driver runs another engine)."""
        return _chart.ChartSearch(self.grammar.arrays, self.lm, self.grammar.n_symbols, self.grammar.goal_symbol,
                                  self.settings, **self._engine_weights(), **self.engine_options)

    def _engine_weights(self) -> dict:
        return dict(weight_lm=self.weights[LM], weight_oov=self.weights[OOV], weight_glue=self.weights[GLUE],
                    weight_word_count=self.weights[WORD_COUNT])

    def configure(self, settings: SearchSettings | None = None, **setting_changes) -> SearchSettings:
        """Search with other settings from now on (a SearchSettings, and/or changes to the current
        ones); returns the settings now in use. The grammar arrays are kept (max_span and
        max_unary_depth only bound the search) unless a setting they are prepared under
        (_grammar_settings: table_limit, and the experimental table_limit_rank, rule_order, weight_pushing,
        pop_count) changes: then they are prepared again."""
        previous = self.settings
        self.settings = (settings or self.settings).replace(**setting_changes)
        self.space.max_span = self.settings.max_span
        self.space.max_unary_depth = self.settings.max_unary_depth
        if _grammar_settings(self.settings) != _grammar_settings(previous):
            self._prepare_grammar()
        else:
            self.engine.configure(self.settings, **self._engine_weights())
        return self.settings

    # ------------------------------------------------------------------ search

    def run(self, words) -> SearchResult:
        """Fill the chart for one sentence (rule-table words, escaped)."""
        started = time.perf_counter()
        words = list(words)
        n = len(words)
        word_ids = self.store.source_word_ids(words)
        runs = np.asarray(self.store.match_run_array(word_ids), dtype=np.int32).reshape(-1, 3)
        oov_at = np.ones(n, dtype=np.uint8)
        for start, end, symbol in runs.tolist():
            if end - start == 1 and self.grammar.has_single_rule(symbol):
                oov_at[start] = 0
        words_lm = (self.lm.vocab_indices([unescape_word(w) for w in words]).astype(np.int32) if n
                    else np.zeros(0, np.int32))
        engine = self.engine
        engine.decode(words_lm, runs, oov_at, self.count_minimized_recombinations)
        roots, boundary = engine.roots()
        chart = engine.export()
        items_in_cells = engine.items_per_cell()
        stats = {
            "words": n,
            "edges_proposed": int(engine.edges_proposed),
            "edges_kept": int(engine.edges_kept),
            "lm_queries": int(engine.lm_queries),
            "lm_queries_novel": int(engine.lm_queries_novel),
            "recombinations": int(engine.recombinations),
            "items": int(engine.n_items),
            "edges": int(engine.n_edges),
            "items_per_cell": _items_per_cell_by_span(items_in_cells, min(n, engine.max_span)),
            "chart_cells": engine.chart_cells().tolist(),
            "search_seconds": time.perf_counter() - started,
        }
        if self.count_minimized_recombinations:  # of the recombinations, those only KenLM's state minimization allowed
            stats["lm_state_minimized_recombinations"] = int(engine.lm_state_minimized_recombinations)
        return SearchResult(n, roots, boundary, chart, stats)

    search = run  # the old name (tests and callers of ChartDecoder.search)

    # ------------------------------------------------------------------ derivations

    def best(self, result: SearchResult, words) -> ReadBack | None:
        if len(result.roots) == 0:
            return None
        score, r, tree = best_derivation(result.chart, result.roots, result.root_boundary, self.weights[LM])
        return self.reader.read(result.chart, result.n_words, words, score, float(result.root_boundary[r]), tree)

    def kbest(self, result: SearchResult, words, k: int, unique: bool = True,
              max_derivations: int | None = None) -> list[ReadBack]:
        """The k best derivations (unique: the k best distinct translations, among at most
        `max_derivations` derivations, 50 * k by default), best first; compiled (decoder._ext._kbest)."""
        if len(result.roots) == 0 or k <= 0:
            return []
        found = self.kbest_finder.derivations(result.chart, result.roots, self.weights[LM] * result.root_boundary,
                                              words, k, unique, max_derivations, self.settings.memory_budget_mb,
                                              self.engine.memory_bytes)
        return [self.reader.read(result.chart, result.n_words, words, score, float(result.root_boundary[root_index]),
                                 edges)
                for score, root_index, edges in found]

    def kbest_reference(self, result: SearchResult, words, k: int, unique: bool = True,
                        max_derivations: int | None = None) -> list[ReadBack]:
        """`kbest` by the pure-Python reference (decoder.search.kbest.ReferenceLazyKBest), for the tests."""
        if len(result.roots) == 0 or k <= 0:
            return []
        chart = {name: values.tolist() for name, values in result.chart.items()}
        finder = ReferenceLazyKBest(chart, result.roots.tolist(), (self.weights[LM] * result.root_boundary).tolist(),
                           edge_tails, functools.partial(self.reader.edge_blocks, chart, words))
        return [self.reader.read(result.chart, result.n_words, words, score,
                                 float(result.root_boundary[root_index]), preorder_edges(tree))
                for score, root_index, tree in kbest_derivations(finder, k, unique, max_derivations)]


def _items_per_cell_by_span(counts: np.ndarray, max_length: int) -> dict:
    """{span length: [mean, variance]} of the items left per cell (Xiao et al. Figures 11-12).

    The mean and variance are numpy's (np.mean, np.var of the float64 counts of the cells of each
    length), computed by the same reductions without their per-call overhead: the same floats."""
    n = counts.shape[0] - 1
    values = np.asarray(counts, dtype=np.float64)
    out = {}
    for length in range(1, min(max_length, n) + 1):
        cells = values.diagonal(length).copy()  # counts[i, i + length], i = 0 .. n - length
        size = cells.shape[0]
        mean = np.add.reduce(cells) / size
        cells -= mean
        np.multiply(cells, cells, out=cells)
        out[length] = [float(mean), float(np.add.reduce(cells) / size)]
    return out


def _grammar_settings(settings: SearchSettings) -> tuple:
    """The settings the grammar arrays are prepared under (a change prepares them again)."""
    experimental = settings.experimental
    return (settings.table_limit, experimental.rule_order, experimental.weight_pushing, experimental.table_limit_rank,
            experimental.pop_count)
