"""`search = "incremental"`: boundary-word grouping (Heafield, Koehn and Lavie 2013), compiled.

`IncrementalDecoder` has ChartDecoder's interface (constructor, `search`, `best`,
`kbest`, `configure`) and fills the same chart, so derivations and k-best are read
back by ChartDecoder's code; only the search inside a cell is
decoder._ext._incremental.IncrementalSearch (see its docstring for the algorithm)
instead of cube pruning. The pure-Python reference is
decoder.search.incremental_reference. `pop_limit` counts complete hypotheses per
cell and unary round, as cube pruning's does (0: no limit, the exhaustive chart).
"""
from __future__ import annotations

from decoder._ext._incremental import IncrementalSearch

from .chart import ChartDecoder, SearchResult


class IncrementalDecoder(ChartDecoder):
    """The compiled incremental search over one grammar store and one KenLM model."""

    def __init__(self, store, lm, weights, space=None, *, pop_limit: int = 100, beam_size: int = 0,
                 beam_threshold: float = 0.0, exhaustive: bool = False):
        super().__init__(store, lm, weights, space, pop_limit=pop_limit, beam_size=beam_size,
                         beam_threshold=beam_threshold, exhaustive=exhaustive)
        self.search_engine = IncrementalSearch(self._arrays, lm, self.n_symbols, self.goal_symbol)
        self.configure(pop_limit=pop_limit, beam_size=beam_size, beam_threshold=beam_threshold,
                       exhaustive=exhaustive)

    def search(self, words) -> SearchResult:
        result = super().search(words)
        result.stats["partial_edges_popped"] = int(self.search_engine.partial_pops)
        result.stats["trie_nodes"] = int(self.search_engine.n_trie_nodes)
        return result
