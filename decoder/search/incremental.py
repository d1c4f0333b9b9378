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

from .driver import ChartSearchDriver, SearchResult

_incremental = compiled_module("_incremental")
_chart = compiled_module("_chart")


def sorted_rule_arrays(arrays: dict, lm) -> dict:
    """Per position of the sorted rule arrays (pair_rules_sorted, single_rules_sorted): the rule's
    score and its words' LM estimate (_chart.rule_lm_estimates; NaN for a carrying rule, which has
    no LM score). A group's initial partial edges (tails at their roots) are scored from these,
    read in order instead of through each rule id."""
    estimate = _chart.rule_lm_estimates(lm, arrays["rule_target_lm"], arrays["rule_target_offsets"])
    estimate = np.where(np.asarray(arrays["rule_carries"]) != 0, np.nan, estimate)
    out = {}
    for kind in ("pair", "single"):
        rules = np.asarray(arrays[f"{kind}_rules_sorted"], dtype=np.int64)
        out[f"{kind}_sorted_score"] = np.ascontiguousarray(np.asarray(arrays["rule_score"])[rules], dtype=np.float64)
        out[f"{kind}_sorted_estimate"] = np.ascontiguousarray(estimate[rules], dtype=np.float64)
    return out


class IncrementalSearchDriver(ChartSearchDriver):
    """The compiled incremental search over one grammar store and one KenLM model."""

    algorithm = "incremental"

    def _new_engine(self):
        arrays = dict(self.grammar.arrays, **sorted_rule_arrays(self.grammar.arrays, self.lm))
        return _incremental.IncrementalSearch(arrays, self.lm, self.grammar.n_symbols, self.grammar.goal_symbol,
                                              self.settings, **self._engine_weights())

    def run(self, words) -> SearchResult:
        result = super().run(words)
        result.stats["partial_edges_popped"] = int(self.engine.partial_pops)
        result.stats["partial_edges_pushed"] = int(self.engine.partial_pushes)
        result.stats["initial_edges"] = int(self.engine.initial_edges)
        result.stats["partial_lm_novel"] = int(self.engine.partial_lm_novel)
        result.stats["complete_edges_scored"] = int(self.engine.complete_scored)
        result.stats["flat_tails"] = int(self.engine.flat_tails)
        result.stats["trie_nodes"] = int(self.engine.n_trie_nodes)
        return result

    search = run
