"""`search = "incremental"`: boundary-word grouping (Heafield, Koehn and Lavie 2013), compiled.

`IncrementalSearchDriver` is ChartSearchDriver (decoder.search.driver) with the
compiled engine decoder._ext._incremental.IncrementalSearch (see its docstring for
the algorithm) instead of cube pruning: the same chart, read-back, k-best and
settings. The pure-Python reference is decoder.search.incremental_reference.
`pop_limit` counts complete hypotheses per cell and unary round, as cube
pruning's does (0: no limit, the exhaustive chart); `exhaustive = true` runs
ChartSearch's exhaustive search.
"""
from __future__ import annotations

import numpy as np

from decoder._ext import compiled_module

from . import prepared_grammar
from .driver import ChartSearchDriver, SearchResult

_incremental = compiled_module("_incremental")
_chart_grammar = compiled_module("_chart_grammar")


# The records the engine reads (its SortedRule struct, declared once in ext/_incremental.pxd).
SORTED_RULE = _incremental.SORTED_RULE_DTYPE


def sorted_rule_arrays(arrays: dict, lm) -> dict:
    """Per position of the sorted rule arrays (pair_rules_sorted, then single_rules_sorted from
    sorted_rules_single_offset on) one SortedRule record: the rule's score and its words' LM estimate
    (_chart_grammar.rule_lm_estimates; NaN for a carrying rule, which has no LM score), its id, its LM
    target's first and last symbol, length, offset and hash, its lhs, and its junction gap (junction_gaps,
    in 1/_incremental.JUNCTION_GAP_UNITS log10, rounded up; a rule whose gap is above the engine's
    junction_threshold has its initial edges queued at their exact corner). A group's initial partial edges
    (tails at their roots) are scored from these, read in order instead of through each rule id."""
    estimate = _chart_grammar.rule_lm_estimates(lm, arrays["rule_target_lm"], arrays["rule_target_offsets"])
    estimate = np.where(np.asarray(arrays["rule_carries"]) != 0, np.nan, estimate)
    target = np.asarray(arrays["rule_target_lm"], dtype=np.int64)
    offsets = np.asarray(arrays["rule_target_offsets"], dtype=np.int64)
    length = offsets[1:] - offsets[:-1]
    first = np.where(length > 0, target[np.minimum(offsets[:-1], max(len(target) - 1, 0))] if len(target) else 0, 0)
    last = np.where(length > 0, target[np.maximum(offsets[1:] - 1, 0)] if len(target) else 0, 0)
    if len(length) and length.max() > np.iinfo(np.int16).max:
        raise ValueError(f"a rule's LM target of {int(length.max())} symbols: SortedRule holds at most 32767")
    # (in the engine's units, rounded up: a gap above the threshold stays above it)
    units = _incremental.JUNCTION_GAP_UNITS
    gaps = np.minimum(np.ceil(junction_gaps(lm, target, offsets) * units), np.iinfo(np.uint16).max).astype(np.uint16)
    parts = []
    for kind in ("pair", "single"):
        rules = np.asarray(arrays[f"{kind}_rules_sorted"], dtype=np.int64)
        records = np.zeros(len(rules), dtype=SORTED_RULE)
        records["score"] = np.asarray(arrays["rule_score"], dtype=np.float64)[rules]
        records["estimate"] = estimate[rules]
        records["rule"] = rules
        records["target_first"] = first[rules]
        records["target_last"] = last[rules]
        records["target_length"] = length[rules]
        records["junction_gap"] = gaps[rules]
        records["lhs"] = np.asarray(arrays["rule_lhs"], dtype=np.int64)[rules]
        records["target_lo"] = offsets[:-1][rules]
        records["target_hash"] = np.asarray(arrays["rule_target_hash"]).view(np.uint64)[rules]
        parts.append(records)
    return {"sorted_rules": np.concatenate(parts), "sorted_rules_single_offset": np.int64(len(parts[0]))}


def junction_gaps(lm, target: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float64[R]: per rule, the largest minus words-only estimate (log10, from no context) of a word that
    follows one of its tails in its LM target (a negative symbol), 0 where no word does. Such a word's
    estimate is what the words-only key of an initial edge charges for it before the tail's right words
    are known: for a rare word that its context predicts well, the key is far below the edge's score."""
    n_rules = len(offsets) - 1
    gaps = np.zeros(n_rules, dtype=np.float64)
    if len(target) < 2:
        return gaps
    position = np.arange(1, len(target))
    rule_of = np.searchsorted(offsets, position, side="right") - 1
    after_tail = (target[1:] >= 0) & (target[:-1] < 0) & (position != offsets[rule_of])
    if not after_tail.any():
        return gaps
    words = target[1:][after_tail]
    vocabulary, index = np.unique(words, return_inverse=True)
    single = _chart_grammar.rule_lm_estimates(lm, vocabulary.astype(np.int32), np.arange(len(vocabulary) + 1))
    np.maximum.at(gaps, rule_of[after_tail], -single[index])
    return gaps


class IncrementalSearchDriver(ChartSearchDriver):
    """The compiled incremental search over one grammar store and one KenLM model (engine_options: the
    keywords of IncrementalSearch, e.g. {"trace": True})."""

    algorithm = "incremental"

    def _new_engine(self):
        # the records are prepared once per grammar and weights (decoder.search.prepared_grammar)
        key = self.grammar.prepared_key
        self.records = prepared_grammar.cached(self.store, key and prepared_grammar.derived_key(key, self.algorithm),
                                               lambda: sorted_rule_arrays(self.grammar.arrays, self.lm))
        arrays = dict(self.grammar.arrays, sorted_rules=self.records["sorted_rules"],
                      sorted_rules_single_offset=int(np.ravel(self.records["sorted_rules_single_offset"])[0]))
        return _incremental.IncrementalSearch(arrays, self.lm, self.grammar.n_symbols, self.grammar.goal_symbol,
                                              self.settings, **self._engine_weights(), **self.engine_options)

    def run(self, words) -> SearchResult:
        result = super().run(words)
        result.stats["partial_edges_popped"] = int(self.engine.partial_pops)
        result.stats["partial_edges_pushed"] = int(self.engine.partial_pushes)
        result.stats["initial_edges"] = int(self.engine.initial_edges)
        result.stats["initial_edges_at_corner"] = int(self.engine.corner_keys)
        result.stats["partial_lm_novel"] = int(self.engine.partial_lm_novel)
        result.stats["complete_edges_scored"] = int(self.engine.complete_scored)
        result.stats["flat_tails"] = int(self.engine.flat_tails)
        result.stats["trie_nodes"] = int(self.engine.n_trie_nodes)
        return result

    search = run
