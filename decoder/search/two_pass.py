"""Two-pass LM-driven hypergraph search (Venugopal, Zollmann and Vogel 2007) over a grammar store.

    driver = TwoPassSearchDriver(store, lm, weights, space, SearchSettings(search="two-pass", pop_limit=30))
    result = driver.run(words)       # both passes; result.two_pass: the second pass's complete derivations
    driver.best(result, words)       # a ReadBack (decoder.search.readback), or None
    driver.kbest(result, words, 10)

`TwoPassSearchDriver` is a ChartSearchDriver (same grammar arrays, read-back and
stats) whose compiled engine is decoder._ext._two_pass.TwoPassSearch.

First pass (section 3.1): the compiled CKY with items recombined on (X, i, j) (and
unary round), each carrying the KenLM state and score of its best member; cube
pruning's `pop_limit` bounds the hyperedges built per cell (all of them are kept)
and `beam_size` / `beam_threshold` the items per cell; `first_pass_items` and
`first_pass_threshold` (the paper's beta; experimental settings) stop a cell's
cube pruning early, at that many items or at a pop that far below the best one.
Second pass (section 3.2): H.Search from the goal item, best first, bounded by
the settings `two_pass_beam` (partial items more than that below the best score
seen are dropped), `agenda_limit`, `max_pops` (unwind operations) and the
experimental `edge_limit` (hyperedges per item, best first by w^1), and ended
early by the experimental `second_pass_stop` ("bound": once the best complete
derivation scores at least the agenda's best; "first": at the first complete
one); `kbest_per_class` partial items are kept per recombination class. All
defaults live in decoder.settings (SearchSettings, ExperimentalSettings). The stats add
`agenda_pops`, `unwindings` and `second_pass_cpu_seconds` (part of `cpu_seconds`).
The pure-Python reference of both passes is decoder.search.two_pass_reference.
"""
from __future__ import annotations

import time

from decoder._ext import compiled_module

from ..settings import SearchSettings
from .driver import ChartSearchDriver, SearchResult
from .model import LM, SearchSpace, Weights
from .readback import ReadBack, edge_tails

_two_pass = compiled_module("_two_pass")

MAX_RESULTS = 200  # complete derivations the second pass returns, for k-best


class TwoPassSearchDriver(ChartSearchDriver):
    """Two-pass search over one grammar store and one KenLM model (ChartSearchDriver's interface)."""

    algorithm = "two-pass"

    def __init__(self, store, lm, weights: Weights, space: SearchSpace | None = None,
                 settings: SearchSettings | None = None, *, engine_options: dict | None = None,
                 **setting_changes):
        super().__init__(store, lm, weights, space, settings, engine_options=engine_options,
                         **{**setting_changes, "search": self.algorithm})
        self.bos_id, self.eos_id = (int(i) for i in lm.vocab_indices(["<s>", "</s>"]))

    def _new_engine(self):
        return _two_pass.TwoPassSearch(self.grammar.arrays, self.lm, self.grammar.n_symbols,
                                       self.grammar.goal_symbol, self.settings, **self._engine_weights(),
                                       **self.engine_options)

    def run(self, words) -> SearchResult:
        started, cpu_started = time.perf_counter(), time.process_time()
        result = super().run(words)
        engine = self.engine
        second_pass_started = time.process_time()
        result.two_pass = engine.hsearch(self.bos_id, self.eos_id, MAX_RESULTS) if len(result.roots) else []
        result.stats.update({
            "lm_queries": int(engine.lm_queries),
            "lm_queries_novel": int(engine.lm_queries_novel),
            "agenda_pops": int(engine.agenda_pops),
            "unwindings": int(engine.unwindings),
            "search_seconds": time.perf_counter() - started,
            "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu_started,
            "second_pass_cpu_seconds": time.process_time() - second_pass_started,  # of cpu_seconds
        })
        return result

    search = run

    def best(self, result: SearchResult, words) -> ReadBack | None:
        found = self.kbest(result, words, 1, unique=False)
        return found[0] if found else None

    def kbest(self, result: SearchResult, words, k: int, unique: bool = True,
              max_derivations: int | None = None) -> list[ReadBack]:
        """The k best complete derivations the second pass reached (unique: distinct texts)."""
        out, seen = [], set()
        candidates = result.two_pass if max_derivations is None else result.two_pass[:max_derivations]
        for score, lm_exact, steps in candidates:
            read_back = self._read_steps(result, words, score, lm_exact, steps)
            if unique:
                if read_back.text in seen:
                    continue
                seen.add(read_back.text)
            out.append(read_back)
            if len(out) >= k:
                break
        return out

    def _read_steps(self, result: SearchResult, words, score: float, lm_exact: float, steps) -> ReadBack:
        """The read-back of a complete partial item, from its unwinding steps (instance, edge, base)."""
        chart = result.chart
        by_instance = {instance: (edge, base) for instance, edge, base in steps}

        # The derivation's edges in pre-order (iteratively: a long sentence is a deep tree).
        edges, stack = [], [0]
        while stack:
            edge, base = by_instance[stack.pop()]
            edges.append(edge)
            stack.extend(base + t for t in reversed(range(len(edge_tails(chart, edge)))))
        # The reader sums the first pass's edge LM scores plus a boundary term; the second
        # pass rescored the output exactly, so the boundary term is the difference.
        first_pass_lm = float(sum(float(chart["edge_lm"][edge]) for edge in edges))
        read_back = self.reader.read(chart, result.n_words, words, float(score), float(lm_exact) - first_pass_lm,
                                     edges)
        read_back.features[LM] = float(lm_exact)
        return read_back


TwoPassDecoder = TwoPassSearchDriver  # the name the first version had
