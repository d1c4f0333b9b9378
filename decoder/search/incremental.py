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

from decoder._ext import compiled_module

from .driver import ChartSearchDriver, SearchResult

_incremental = compiled_module("_incremental")
_chart = compiled_module("_chart")


class IncrementalSearchDriver(ChartSearchDriver):
    """The compiled incremental search over one grammar store and one KenLM model."""

    algorithm = "incremental"

    def _new_engine(self):
        arrays = self.grammar.arrays
        # Initial partial edges (tails at their roots) are scored by their words' LM estimate.
        estimate = _chart.rule_lm_estimates(self.lm, arrays["rule_target_lm"], arrays["rule_target_offsets"])
        return _incremental.IncrementalSearch(dict(arrays, rule_lm_estimate=estimate), self.lm, self.grammar.n_symbols,
                                              self.grammar.goal_symbol, self.settings, **self._engine_weights())

    def run(self, words) -> SearchResult:
        result = super().run(words)
        result.stats["partial_edges_popped"] = int(self.engine.partial_pops)
        result.stats["partial_edges_pushed"] = int(self.engine.partial_pushes)
        result.stats["initial_edges"] = int(self.engine.initial_edges)
        result.stats["partial_lm_novel"] = int(self.engine.partial_lm_novel)
        result.stats["complete_edges_scored"] = int(self.engine.complete_scored)
        result.stats["trie_nodes"] = int(self.engine.n_trie_nodes)
        return result

    search = run
