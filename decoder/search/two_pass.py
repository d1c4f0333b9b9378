"""Two-pass LM-driven hypergraph search (Venugopal, Zollmann and Vogel 2007) over a grammar store.

`TwoPassDecoder` has ChartDecoder's interface (constructor from store, lm, weights,
space; `search(words)` -> SearchResult with .stats; `best`; `kbest`) and its grammar
arrays and read-back; the compiled engine is decoder._ext._two_pass.TwoPassSearch.

First pass (section 3.1): the compiled CKY with items recombined on (X, i, j) (and
unary round), each carrying the KenLM state and score of its best member; cube
pruning's `pop_limit` bounds the hyperedges built per cell (all of them are kept)
and `beam_size` / `beam_threshold` the items per cell; `edge_limit` is how many of an
item's hyperedges (best first by w^1 through the edge) the second pass may unwind into. Second pass (section 3.2):
H.Search from the goal item, best first, with `beam` (Z: partial items more than Z
below the best score seen are dropped), `agenda_limit` and `max_pops` (unwind
operations); `kbest_per_class` partial items are kept per recombination class.
The pure-Python reference of both passes is decoder.search.two_pass_reference.
"""
from __future__ import annotations

import time

from decoder._ext._two_pass import TwoPassSearch

from .chart import ChartDecoder, Hypothesis, SearchResult
from .model import LM, SearchSpace, Weights

# Defaults after the paper's setting (first-pass beam 5, agenda 1000), in this decoder's units.
DEFAULT_FIRST_PASS_POP_LIMIT = 20
DEFAULT_BEAM = 5.0
DEFAULT_AGENDA_LIMIT = 1000
DEFAULT_MAX_POPS = 10000
MAX_RESULTS = 200  # complete derivations kept for k-best


class TwoPassDecoder(ChartDecoder):
    """Two-pass search over one grammar store and one KenLM model (ChartDecoder's interface)."""

    def __init__(self, store, lm, weights: Weights, space: SearchSpace | None = None, *,
                 pop_limit: int = DEFAULT_FIRST_PASS_POP_LIMIT, beam_size: int = 0, beam_threshold: float = 0.0,
                 exhaustive: bool = False, beam: float = DEFAULT_BEAM, agenda_limit: int = DEFAULT_AGENDA_LIMIT,
                 max_pops: int = DEFAULT_MAX_POPS, edge_limit: int = 0, kbest_per_class: int = 1):
        super().__init__(store, lm, weights, space, pop_limit=pop_limit, beam_size=beam_size,
                         beam_threshold=beam_threshold, exhaustive=exhaustive)
        self.search_engine = TwoPassSearch(self._arrays, lm, store.n_symbols, self.goal_symbol)
        self.configure(pop_limit=pop_limit, beam_size=beam_size, beam_threshold=beam_threshold,
                       exhaustive=exhaustive)
        self.kbest_per_class = kbest_per_class
        self.configure_second_pass(beam=beam, agenda_limit=agenda_limit, max_pops=max_pops, edge_limit=edge_limit)
        self.bos_id, self.eos_id = (int(i) for i in lm.vocab_indices(["<s>", "</s>"]))

    def configure_second_pass(self, *, beam=None, agenda_limit=None, max_pops=None, edge_limit=None,
                              kbest_per_class=None):
        """None keeps a setting; beam inf, agenda_limit 0, max_pops -1 and edge_limit 0 mean no limit."""
        engine = self.search_engine
        if beam is not None:
            engine.beam = float(beam)
        if agenda_limit is not None:
            engine.agenda_limit = int(agenda_limit)
        if max_pops is not None:
            engine.max_pops = int(max_pops)
        if edge_limit is not None:
            engine.edge_limit = int(edge_limit)
        if kbest_per_class is not None:
            self.kbest_per_class = int(kbest_per_class)

    def search(self, words) -> SearchResult:
        started, cpu_started = time.perf_counter(), time.process_time()
        result = super().search(words)
        engine = self.search_engine
        result.two_pass = engine.hsearch(self.kbest_per_class, self.bos_id, self.eos_id, MAX_RESULTS) \
            if len(result.roots) else []
        result.stats.update({
            "lm_queries": int(engine.lm_queries),
            "lm_queries_novel": int(engine.lm_queries_novel),
            "agenda_pops": int(engine.agenda_pops),
            "unwindings": int(engine.unwindings),
            "search_seconds": time.perf_counter() - started,
            "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu_started,
        })
        return result

    def best(self, result: SearchResult, words) -> Hypothesis | None:
        found = self.kbest(result, words, 1, unique=False)
        return found[0] if found else None

    def kbest(self, result: SearchResult, words, k: int, unique: bool = True,
              max_derivations: int | None = None) -> list[Hypothesis]:
        """The k best complete derivations the second pass reached (unique: distinct texts)."""
        out, seen = [], set()
        candidates = result.two_pass if max_derivations is None else result.two_pass[:max_derivations]
        for score, lm_exact, steps in candidates:
            hypothesis = self._from_steps(result, words, score, lm_exact, steps)
            if unique:
                if hypothesis.text in seen:
                    continue
                seen.add(hypothesis.text)
            out.append(hypothesis)
            if len(out) >= k:
                break
        return out

    def _from_steps(self, result: SearchResult, words, score: float, lm_exact: float, steps) -> Hypothesis:
        """The derivation tree (edge, [subtrees]) of a complete partial item's unwinding steps."""
        chart = result.chart
        by_instance = {instance: (edge, base) for instance, edge, base in steps}

        def tree(instance):
            edge, base = by_instance[instance]
            return (edge, [tree(base + t) for t in range(len(self._tails(chart, edge)))])

        root = tree(0)
        # ChartDecoder._hypothesis sums the first pass's edge LM scores plus a boundary term;
        # the second pass rescored the output exactly, so the boundary term is the difference.
        first_pass_lm = 0.0
        stack = [root]
        while stack:
            edge, subtrees = stack.pop()
            first_pass_lm += float(chart["edge_lm"][edge])
            stack.extend(subtrees)
        hypothesis = self._hypothesis(result, words, float(score), float(lm_exact) - first_pass_lm, root)
        hypothesis.features[LM] = float(lm_exact)
        return hypothesis

