"""The grammar as the compiled search reads it, prepared once per decoder.

`GrammarArrays(store, lm, weights, space, table_limit, rule_order)` turns a grammar store into the arrays of
decoder._ext._chart.ChartSearch: rule scores (weights . features + word-count weight
* target words), target sides in KenLM ids, each key's rules sorted best first
(rule_order: by rule score plus weighted LM estimate, or by rule score),
dense per-symbol look-up offsets, the binary keys as (right child, rules) pairs
(_chart_grammar.pair_right_keys), the keys of the left symbols with the most keys listed
by right symbol with each symbol's mask of them (_chart_grammar.pair_key_index), and glue
values. It also names the symbols: the store's, then the unknown-word labels the
grammar lacks, then GOAL. With a
`table_limit` (> 0) only the best rules of each source side are in the sorted rule
arrays (decoder.search.table_limit): the limit is applied here, at open, under
these weights. What depends on the weights is computed by `prepare`, or mapped from the
prepared grammar cache (decoder.search.prepared_grammar) when the store was opened under
the same weights and settings before. With `weight_pushing` the rule scores of the binarization's
virtual rules carry their best completion (decoder.search.weight_pushing). With
`pop_count = "real"` each key's rules with a real lhs come before those with a
virtual lhs (each part in the rule order), for the search's two cubes per cell.
"""
from __future__ import annotations

import numpy as np

from decoder._ext import compiled_module

from ..grammar import unescape_word
from ..settings import DEFAULT_EXPERIMENTAL_SETTINGS, DEFAULT_SEARCH_SETTINGS
from .model import GOAL, LM, WORD_COUNT, SearchSpace, Weights
from . import prepared_grammar
from .table_limit import TableLimit, limit_sorted_rules, table_limit_rules
from .weight_pushing import pushed_rule_scores

_chart_grammar = compiled_module("_chart_grammar")
sort_rules_by_score, target_hashes, rule_lm_estimates = \
    _chart_grammar.sort_rules_by_score, _chart_grammar.target_hashes, _chart_grammar.rule_lm_estimates
pair_right_keys, pair_key_index, wide_left_symbols = \
    _chart_grammar.pair_right_keys, _chart_grammar.pair_key_index, _chart_grammar.wide_left_symbols


class GrammarArrays:
    """What the compiled search reads (`arrays`), and the symbol and rule facts read-back needs."""

    def __init__(self, store, lm, weights: Weights, space: SearchSpace,
                 table_limit: int = DEFAULT_SEARCH_SETTINGS.table_limit,
                 rule_order: str = DEFAULT_EXPERIMENTAL_SETTINGS.rule_order,
                 weight_pushing: bool = DEFAULT_EXPERIMENTAL_SETTINGS.weight_pushing,
                 table_limit_rank: str = DEFAULT_EXPERIMENTAL_SETTINGS.table_limit_rank,
                 pop_count: str = DEFAULT_EXPERIMENTAL_SETTINGS.pop_count):
        n_nt, n_symbols = store.n_nonterminals, store.n_symbols
        self.n_symbols = n_symbols

        # Symbols: the store's, then unknown-word labels the grammar lacks, then GOAL.
        # (The store's names are read on first use: derivations need them, the search does not.)
        self.symbol_names = SymbolNames(store)
        real_ids = store.real_label_ids
        oov_symbols = []
        extra = 0
        for label in space.oov_labels:
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
            start, concat = space.glue.start_value(name), space.glue.concat_value(name)
            glue_start[symbol] = np.nan if start is None else start
            glue_concat[symbol] = np.nan if concat is None else concat

        # Everything that depends on the weights: computed, or mapped from the prepared grammar cache
        # (decoder.search.prepared_grammar) when this store was opened under the same weights before.
        prepared = self._prepared(store, lm, weights, table_limit, rule_order, weight_pushing,
                                  table_limit_rank, pop_count, is_real)
        self.rule_word_count = prepared.pop("rule_word_count")
        self.rule_order_score = prepared.pop("rule_order_score")
        self.table_limit = TableLimit(int(table_limit) if table_limit > 0 else 0,
                                      prepared.pop("table_limit_rules"), prepared.pop("table_limit_source_rules"))
        single_offsets = prepared.pop("single_offsets")
        single_keys = np.asarray(store.single_keys)
        all_symbols = np.arange(n_all, dtype=np.int64)
        index = np.searchsorted(single_keys, all_symbols)
        present = (index < len(single_keys)) & (single_keys[np.minimum(index, max(len(single_keys) - 1, 0))] == all_symbols) \
            if len(single_keys) else np.zeros(n_all, bool)
        # [all symbols, 2]: each symbol's range in single_rules_sorted, its two ends side by side (one cache
        # miss, not two, when a cell looks a symbol's one-child rules up)
        self.single_range = np.stack([
            np.where(present, single_offsets[np.minimum(index, len(single_offsets) - 1)], 0),
            np.where(present, single_offsets[np.minimum(index + 1, len(single_offsets) - 1)], 0)],
            axis=1).astype(np.int64)

        self.arrays = dict(
            rule_lhs=np.ascontiguousarray(store.rule_lhs, dtype=np.int32),
            rule_carries=np.ascontiguousarray(store.rule_carries, dtype=np.uint8),
            rule_target_offsets=np.ascontiguousarray(store.rule_target_offsets, dtype=np.int64),
            pair_keys=np.ascontiguousarray(store.pair_keys, dtype=np.int64),
            **prepared,
            single_range=self.single_range,
            symbol_is_real=is_real,
            glue_start_value=glue_start,
            glue_concat_value=glue_concat,
            oov_symbols=np.array(oov_symbols, dtype=np.int32),
        )

    def _prepared(self, store, lm, weights: Weights, table_limit: int, rule_order: str, weight_pushing: bool,
                  table_limit_rank: str, pop_count: str, is_real: np.ndarray) -> dict:
        """The weight-dependent arrays, from the prepared grammar cache or computed (and cached); sets
        `prepared_key`, the cache key (None when not cached), which a search's own records derive from."""
        lm_path = getattr(lm, "path", None)  # an LM without a file (a test's) is never cached
        self.prepared_key = None
        if lm_path is not None and len(store) >= prepared_grammar.MIN_CACHED_RULES:
            facts = {"weights": sorted((name, float(value)) for name, value in weights.by_name.items()),
                     "table_limit": int(table_limit), "rule_order": rule_order,
                     "weight_pushing": bool(weight_pushing), "table_limit_rank": table_limit_rank,
                     "pop_count": pop_count}
            self.prepared_key = prepared_grammar.cache_key(store, lm_path, facts)
        return prepared_grammar.cached(store, self.prepared_key, lambda: prepare(
            store, lm, weights, table_limit, rule_order, weight_pushing, table_limit_rank, pop_count, is_real))

    def has_single_rule(self, symbol: int) -> bool:
        """Whether a one-child rule (a lexical rule, for a terminal run) rewrites `symbol`."""
        lo, hi = self.single_range[symbol]
        return bool(hi > lo)


class SymbolNames:
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
        return self.store.nonterminal_name(symbol)  # a virtual symbol: its line alone

    def get(self, symbol: int, default=None):
        try:
            return self[symbol]
        except (IndexError, KeyError):
            return default


def prepare(store, lm, weights: Weights, table_limit: int, rule_order: str, weight_pushing: bool,
            table_limit_rank: str, pop_count: str, is_real: np.ndarray) -> dict[str, np.ndarray]:
    """What the search reads that depends on the weights (and the LM's vocabulary): rule scores and
    target sides in LM ids, each key's rules sorted and cut to the table limit, the binary keys'
    look-up arrays; plus the table limit's choice, the rules' target word counts and their order
    scores, which read-back and the benchmarks use (removed from the arrays by GrammarArrays)."""
    n_symbols = store.n_symbols
    # Rule scores: weights . features of the source rule (top rules) + word-count weight * target words.
    feature_weights = np.array([weights[name] for name in store.feature_names], dtype=np.float64)
    source_scores = (np.asarray(store.features) @ feature_weights.astype(np.float32)).astype(np.float64) \
        if len(feature_weights) else np.zeros(store.n_source_rules)
    origin = np.asarray(store.rule_origin)
    target = np.asarray(store.rule_target)
    offsets = np.asarray(store.rule_target_offsets)
    is_word = np.zeros(len(target) + 1, dtype=np.int64)
    np.cumsum(target >= 0, out=is_word[1:])
    rule_word_count = (is_word[offsets[1:]] - is_word[offsets[:-1]]).astype(np.int32)
    rule_score = np.where(origin >= 0, source_scores[np.maximum(origin, 0)] if len(source_scores) else 0.0, 0.0)
    rule_score = rule_score + weights[WORD_COUNT] * rule_word_count
    rule_score = np.ascontiguousarray(rule_score, dtype=np.float64)

    # Rule-table words are escaped (decoder.grammar.escape_word); the LM knows them plain.
    lm_ids = lm.vocab_indices([unescape_word(w) for w in store.target_vocab]).astype(np.int32)
    rule_target_lm = np.where(target >= 0, lm_ids[np.maximum(target, 0)] if len(lm_ids) else 0, target)
    rule_target_lm = np.ascontiguousarray(rule_target_lm, dtype=np.int32)

    # The table limit: which rules stay (applied to the sorted arrays below). table_limit_rank
    # "estimate" ranks a source side's rules as Moses does: their score plus the weighted LM
    # estimate of their target words.
    lm_estimate = weights[LM] * rule_lm_estimates(lm, rule_target_lm, offsets) \
        if "estimate" in (rule_order, table_limit_rank) or weight_pushing else None
    limit = table_limit_rules(store, source_scores, rule_word_count, weights[WORD_COUNT],
                                         table_limit, lm_estimate if table_limit_rank == "estimate" else None)
    if weight_pushing:
        rule_score = np.ascontiguousarray(pushed_rule_scores(store, rule_score, limit.rules, lm_estimate))

    pair_keys = np.asarray(store.pair_keys)
    pair_offsets = np.asarray(store.pair_offsets)
    pair_rules = np.asarray(store.pair_rules)
    # Cube pruning tries a key's rules in this order: by rule score, plus with "estimate" the
    # weighted LM score of their words on their own (as Moses sorts target phrases), which
    # puts first the rules likely best once the LM is applied.
    rule_order_score = rule_score + lm_estimate if rule_order == "estimate" else rule_score
    # pop_count = "real": a key's rules with a real lhs first, then those with a virtual one (each
    # part in that order), so that the search splits a group into its real and virtual cubes
    # (_chart.ChartSearch._split_groups_by_kind)
    rule_class = None
    if pop_count == "real":
        rule_class = (1 - is_real[np.asarray(store.rule_lhs, dtype=np.int64)]).astype(np.int32)
    pair_rules_sorted = sort_rules_by_score(pair_rules, pair_offsets, rule_order_score, rule_class)
    single_keys = np.asarray(store.single_keys)
    single_offsets = np.asarray(store.single_offsets)
    single_rules = np.asarray(store.single_rules)
    single_rules_sorted = sort_rules_by_score(single_rules, single_offsets, rule_order_score, rule_class)
    # The rules the table limit drops leave the sorted arrays (the keys stay, maybe empty).
    if table_limit > 0:
        pair_rules_sorted, pair_offsets = limit_sorted_rules(pair_rules_sorted, pair_offsets,
                                                             limit.rules)
        single_rules_sorted, single_offsets = limit_sorted_rules(single_rules_sorted, single_offsets,
                                                                 limit.rules)
    # the symbols that are the right child of a key with rules (the others need no look-up on the right)
    symbol_is_right_child = np.zeros(n_symbols, dtype=np.uint8)
    symbol_is_right_child[pair_keys[np.diff(pair_offsets) > 0] % max(n_symbols, 1)] = 1
    pair_left_offsets = np.searchsorted(pair_keys, np.arange(n_symbols + 1, dtype=np.int64) * n_symbols).astype(np.int64)

    return dict(
        rule_target_lm=rule_target_lm,
        rule_score=rule_score,
        rule_target_hash=target_hashes(rule_target_lm, offsets),
        pair_offsets=np.ascontiguousarray(pair_offsets, dtype=np.int64),
        pair_rules_sorted=np.ascontiguousarray(pair_rules_sorted, dtype=np.int32),
        pair_left_offsets=pair_left_offsets,
        pair_right_keys=pair_right_keys(pair_keys, pair_offsets, n_symbols),
        **pair_key_index(pair_keys, pair_offsets, pair_left_offsets, n_symbols,
                         wide_left_symbols(pair_left_offsets)),
        single_rules_sorted=np.ascontiguousarray(single_rules_sorted, dtype=np.int32),
        symbol_is_right_child=symbol_is_right_child,
        # not read by the search (GrammarArrays takes them out of the arrays):
        single_offsets=np.ascontiguousarray(single_offsets, dtype=np.int64),
        rule_word_count=rule_word_count,
        rule_order_score=np.ascontiguousarray(rule_order_score, dtype=np.float64),
        table_limit_rules=np.ascontiguousarray(limit.rules, dtype=bool),
        table_limit_source_rules=np.ascontiguousarray(limit.source_rules, dtype=bool),
    )
