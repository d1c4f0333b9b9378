"""The CKY chart with an integrated KenLM language model, compiled.

One `ChartSearch` per decoder holds the grammar arrays (prepared once by
decoder/search/grammar_arrays.py from the store) and, per sentence, the chart: items
[X, i, j, e] (e = KenLM ChartStates, one per carried target block), hyperedges,
and the sorted item lists the next cells read. Everything between `decode`'s
entry and exit runs without the GIL and without Python objects:

- cell combination: per split point, the rule groups whose (left, right) child
  symbols are present. A finished cell lists once the symbols binary rules read
  (left children with their range of keys and item list, right children with
  their item lists, and a small hash table of the latter by symbol); per left
  symbol, its keys (right child and rules side by side, pair_right_keys) are
  looked up in the right cell's table, or, with more keys than the right cell
  has symbols, the right symbols among its keys: for the <= 64 "wide" left
  symbols with the most keys, by a bit of each right symbol's mask and its
  entry for that bit (pair_key_index's wide_rules, by right symbol), found once per
  (right cell, wide symbol) and kept for the later splits (WideList), for the
  others by galloping. The groups' order, which breaks cube pruning's ties, is
  the one of a plain merge;
- cube pruning (Chiang 2007): a heap of hypotheses (rule rank, left rank, right
  rank) per cell, up to `pop_limit` pops; or every combination in exhaustive mode.
  With pop_count = "real" (an experimental setting) the pop limit counts only pops
  that make real items (complete rule applications, Moses' meaning of a pop), and
  the binarization's virtual items come from a cube of their own with
  `virtual_pop_limit` pops;
- recombination hashing: items equal in (X, e) in one cell and unary round are
  one item (KenLM's hash_value and operator==), with every edge kept for k-best;
  since KenLM minimizes e, items whose first or last order-1 target words differ
  can still be equal: with `count_minimized_recombinations` on, each state also keeps
  its unminimized boundary words (BoundaryWords) and `lm_state_minimized_recombinations`
  counts those merges;
- unary rounds, beam pruning (histogram and threshold), glue over [0, j): the glue
  start GOAL -> X is scored as `<s> X` (Moses' glue rule), so GOAL items carry the
  exact LM of "<s> their output" and recombine on their right state; `roots` adds
  </s> (decoder.search.model);
- LM scoring through KenLM's RuleScore (decoder._ext._lm.score_target), cached
  per sentence by (target side, child states).

Python reads the finished chart back as arrays (`export`) for derivations and k-best.

ChartSearch orchestrates; what needs no chart state lives beside it (docs/architecture.md): the
preparation of the grammar arrays (_chart_grammar.pyx), cubes and their corners
(_cube.pxd), a finished cell's indexes of its symbols (_chart_cells.pxd), the unminimized boundary words
(_chart_boundaries.pxd) and the declarations of the C++ containers (_chart_containers.pxd).
"""
import numpy as np
from decoder.errors import ChartLimitError, MemoryBudgetError


from libc.math cimport isnan, INFINITY
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libcpp.algorithm cimport sort as cpp_sort
from libcpp.vector cimport vector

from decoder._ext._chart_boundaries cimport concatenate_boundaries, same_boundaries
from decoder._ext._chart_cells cimport (find_right_entry, find_right_slot, in_right_filter, right_filter_bit,
                                        right_home_slot, wide_rank)
from decoder._ext._cube cimport append_group, corner_key
from decoder._ext._kenlm cimport KENLM_MAX_ORDER, ChartState, Model
from decoder._ext._lm cimport LanguageModel, chart_state_hash, empty_chart_state, score_target


# At most this many LM results are cached per sentence (about 120 bytes each).
cdef size_t LM_CACHE_ENTRIES = 1 << 20

# Items plus edges one sentence's chart may hold (about 4 GB at ~150 bytes each with their LM states).
# Exhaustive search or pop_limit = 0 reaches it on long sentences; decode() then raises
# ChartLimitError instead of failing to allocate inside nogil code. memory_budget_mb usually stops
# such a search first.
CHART_LIMIT = 25_000_000

# The memory budget (memory_budget_mb) is checked after every cell and every this many edges added
# (a power of two: the test is a mask).
cdef enum:
    MEMORY_CHECK_EDGES = 4096
# decode's nogil steps (ChartSearch._guarded)
cdef enum:
    SEARCH_STEP_RESET = 0
    SEARCH_STEP_CELLS = 1
# The most cells a chart can index ((n + 1) ** 2, int32 cell indexes).
cdef long long MAX_CELLS = 2 ** 31 - 1


cdef class ChartSearch:
    """The compiled chart search over one grammar and one language model."""

    def __init__(self, dict arrays, LanguageModel lm, int64_t n_symbols, int32_t goal_symbol, settings,
                 double weight_lm, double weight_oov, double weight_glue, double weight_word_count):
        self.rule_lhs = arrays["rule_lhs"]
        self.rule_carries = arrays["rule_carries"]
        self.rule_target_offsets = arrays["rule_target_offsets"]
        self.rule_target_lm = arrays["rule_target_lm"]
        self.rule_score = arrays["rule_score"]
        self.rule_target_hash = arrays["rule_target_hash"]
        self.pair_right_keys = arrays["pair_right_keys"]
        self.pair_rules_sorted = arrays["pair_rules_sorted"]
        self.pair_left_offsets = arrays["pair_left_offsets"]
        self.symbol_wide_offset = arrays["symbol_wide_offset"]
        self.wide_rules = arrays["wide_rules"]
        self.symbol_wide_bit = arrays["symbol_wide_bit"]
        self.symbol_right_mask = arrays["symbol_right_mask"]
        self.single_range = arrays["single_range"]
        self.single_rules_sorted = arrays["single_rules_sorted"]
        self.symbol_is_real = arrays["symbol_is_real"]
        self.symbol_is_right_child = arrays["symbol_is_right_child"]
        self.glue_start_value = arrays["glue_start_value"]
        self.glue_concat_value = arrays["glue_concat_value"]
        self.oov_symbols = arrays["oov_symbols"]
        self.n_symbols = n_symbols
        self.goal_symbol = goal_symbol
        self.lm = lm
        self.model = lm.model
        self.glue_start_target[0] = <int32_t>lm.bos_index
        self.glue_start_target[1] = -1
        self.eos_id = <int32_t>lm.eos_index
        self.boundary_length = min(lm.order - 1, KENLM_MAX_ORDER - 1)
        # the two-pass search's first pass recombines on (X, i, j) alone (Venugopal et al. 2007, 3.1)
        self.recombine_on_symbol = False
        self.count_minimized_recombinations = False
        self.configure(settings, weight_lm, weight_oov, weight_glue, weight_word_count)

    def configure(self, settings, double weight_lm, double weight_oov, double weight_glue,
                  double weight_word_count):
        """Take the search settings (a decoder.settings.SearchSettings, the one home of their defaults:
        this class has none; the experimental ones from its `experimental` table) and the weights of the
        features the search adds itself."""
        experimental = settings.experimental
        self.weight_lm = weight_lm
        self.weight_oov = weight_oov
        self.weight_glue = weight_glue
        self.weight_word_count = weight_word_count
        self.max_span = settings.max_span
        self.max_unary_depth = settings.max_unary_depth
        self.pop_limit = settings.pop_limit
        self.unary_pop_limit = experimental.unary_pop_limit  # -1: the pop limit
        self.beam_size = settings.beam_size
        self.beam_threshold = settings.beam_threshold
        self.exhaustive = settings.exhaustive
        self.pop_count_real = experimental.pop_count == "real"
        self.virtual_pop_limit = experimental.virtual_pop_limit
        self.round_item_limit = 0  # (cky_round_stops: the two-pass search sets its own)
        self.round_score_beam = 0.0
        self.chart_limit = CHART_LIMIT
        self.memory_budget_mb = settings.memory_budget_mb
        self.memory_budget = <size_t>settings.memory_budget_mb << 20

    # ---- a sentence: its search without the GIL, guarded, within the memory budget

    def decode(self, words_lm, runs, oov_at, bint count_minimized_recombinations=False):
        """Fill the chart for one sentence.

        words_lm: int32[n] KenLM ids of the source words (for pass-through);
        runs: int32[k, 3] (start, end, run symbol) of the spans that are terminal runs;
        oov_at: uint8[n], 1 where the word gets a pass-through item;
        count_minimized_recombinations: count lm_state_minimized_recombinations (a measurement).
        """
        self.count_minimized_recombinations = count_minimized_recombinations
        cdef const int32_t[::1] words = np.ascontiguousarray(words_lm, dtype=np.int32)
        cdef const int32_t[:, ::1] run_rows = np.ascontiguousarray(runs, dtype=np.int32).reshape(-1, 3)
        cdef const uint8_t[::1] oov = np.ascontiguousarray(oov_at, dtype=np.uint8)
        cdef int n = words.shape[0]
        cdef int i, length, k, status
        if (<long long>n + 1) * (n + 1) > MAX_CELLS:
            raise ChartLimitError(f"this {n:,}-word sentence is longer than a chart can index "
                                  f"({MAX_CELLS:,} cells): split it")
        status = self._guarded(SEARCH_STEP_RESET, n)
        if status == CKY_SEARCH_OK and self.over_budget:
            self._guarded(SEARCH_STEP_RESET, 0)  # nothing allocated for it: an empty chart, for the accessors
            raise MemoryBudgetError(
                f"this {n:,}-word sentence's search needs more than memory_budget_mb = {self.memory_budget_mb} "
                f"(its chart's per-cell tables alone take {self._cell_table_bytes((<size_t>n + 1) * (n + 1)) / 2**20:,.0f} MB): "
                f"split the sentence, or raise memory_budget_mb")
        if status == CKY_SEARCH_OK:
            for i in range(n):
                self.words_lm[i] = words[i]
                self.oov_at[i] = oov[i]
            for k in range(run_rows.shape[0]):
                if run_rows[k, 1] - run_rows[k, 0] >= 1 and run_rows[k, 1] <= n:
                    self.run_at[run_rows[k, 0] * (n + 1) + run_rows[k, 1]] = run_rows[k, 2]
            status = self._guarded(SEARCH_STEP_CELLS, n)
        if status != CKY_SEARCH_OK:
            self._release_memory()
            if status == CKY_SEARCH_NO_MEMORY:
                raise MemoryError(f"the search of this {n:,}-word sentence ran out of memory (std::bad_alloc): "
                                  f"set memory_budget_mb below the memory available")
            raise RuntimeError(f"the search of this {n:,}-word sentence failed with a C++ exception")
        if self.over_budget:
            used = self._memory_bytes() / 2**20
            self._release_memory()
            raise MemoryBudgetError(
                f"this {n:,}-word sentence's search went over memory_budget_mb = {self.memory_budget_mb} "
                f"({used:,.0f} MB in its chart, queues and LM cache): split the sentence, "
                f"lower pop_limit, or raise memory_budget_mb")
        if self.chart_full:
            if self.exhaustive:
                advice = "exhaustive search is for short sentences"
            elif self.pop_limit == 0:
                advice = "pop_limit = 0 (no limit) is for short sentences; set a pop limit"
            else:
                advice = f"at pop_limit = {self.pop_limit}: split the sentence, or lower pop_limit or max_span"
            raise ChartLimitError(f"the chart of this {n}-word sentence outgrew {self.chart_limit:,} items and edges "
                                  f"({advice})")

    cdef int _guarded(self, int step, int n) except -1:
        """Run a nogil step of decode (SEARCH_STEP_RESET: _reset(n), SEARCH_STEP_CELLS: _build_cells) so
        that a C++ exception inside it (std::bad_alloc) ends it with a status (search_errors.hh):
        CKY_SEARCH_OK, CKY_SEARCH_NO_MEMORY or CKY_SEARCH_FAILED."""
        cdef int status
        cky_search_begin()
        try:
            with nogil:
                if step == SEARCH_STEP_RESET:
                    status = cky_guarded(self._reset(n))
                else:
                    status = cky_guarded(self._build_cells())
        finally:
            cky_search_end()
        return status

    cdef void _release_memory(self):
        """After a failed sentence: an empty chart, and the memory its containers held given back."""
        self._guarded(SEARCH_STEP_RESET, 0)
        self.items.shrink_to_fit()
        self.edges.shrink_to_fit()
        self.states.shrink_to_fit()
        self.state_hashes.shrink_to_fit()
        self.state_boundaries.shrink_to_fit()
        self.item_lists.shrink_to_fit()
        self.hypotheses.shrink_to_fit()
        self.heap.shrink_to_fit()
        self.lm_cache.shrink_to_fit()
        self.cell_groups_symbol.shrink_to_fit()
        self.cell_groups_list.shrink_to_fit()
        self.cell_groups_size.shrink_to_fit()
        self.cell_left_symbols.shrink_to_fit()
        self.cell_right_symbols.shrink_to_fit()
        self.right_slots.shrink_to_fit()
        self.right_filters.shrink_to_fit()
        self.wide_pairs.shrink_to_fit()
        self.sort_entries.shrink_to_fit()
        self.kept_entries.shrink_to_fit()
        self.unary_entries.shrink_to_fit()

    cdef int _reset(self, int n) noexcept nogil:
        cdef int cells = (n + 1) * (n + 1)
        self.over_budget = self.memory_budget > 0 and self._cell_table_bytes(cells) > self.memory_budget
        if self.over_budget:  # decode fails the sentence: allocate nothing for it
            return 0
        self.n = n
        self.chart_full = False
        self.words_lm.assign(n, 0)
        self.oov_at.assign(n, 0)
        self.run_at.assign(cells, -1)
        self.items.clear()
        self.edges.clear()
        self.states.clear()
        self.state_hashes.clear()
        self.state_boundaries.clear()
        self.item_lists.clear()
        self.item_lists.push_back(-1)
        self.cell_group_lo.assign(cells, 0)
        self.cell_group_n.assign(cells, 0)
        self.cell_groups_symbol.clear()
        self.cell_groups_list.clear()
        self.cell_groups_size.clear()
        self.cell_left_lo.assign(cells, 0)
        self.cell_left_n.assign(cells, 0)
        self.cell_left_symbols.clear()
        self.cell_right_lo.assign(cells, 0)
        self.cell_right_n.assign(cells, 0)
        self.cell_right_symbols.clear()
        self.cell_right_slots_lo.assign(cells, 0)
        self.cell_right_bits.assign(cells, 0)
        self.right_slots.clear()
        self.cell_right_filter_lo.assign(cells, 0)
        self.right_filters.assign(RIGHT_FILTER_WORDS, 0)  # [0:RIGHT_FILTER_WORDS]: the empty filter
        self.cell_wide_lo.assign(cells, -1)
        self.wide_lists.clear()
        self.wide_pairs.clear()
        self.goal_list_lo.assign(n + 1, 0)
        self.goal_list_n.assign(n + 1, 0)
        self.items_in_cell.assign(cells, 0)
        self.lm_cache_index.clear()
        self.lm_cache.clear()
        self.edges_proposed = 0
        self.edges_kept = 0
        self.lm_queries = 0
        self.lm_queries_novel = 0
        self.recombinations = 0
        self.lm_state_minimized_recombinations = 0
        return 0

    cdef size_t _cell_table_bytes(self, size_t cells) noexcept nogil:
        """The bytes of the per-cell tables of a chart of `cells` cells (_reset's assign(cells, ...))."""
        return cells * (11 * sizeof(int32_t) + sizeof(int8_t))

    cdef size_t _memory_bytes(self) noexcept nogil:
        """About the bytes this sentence's search holds (memory_budget_mb): the elements of its growing
        containers (sizes, not capacities: a vector's spare capacity is not touched, so not resident) and its
        hash tables. A subclass adds its own."""
        cdef size_t n1 = self.n + 1
        return (self._cell_table_bytes(n1 * n1)
                + self.items.size() * sizeof(Item) + self.edges.size() * sizeof(Edge)
                + (self.states.size() + self.pending_states.size()) * sizeof(ChartState)
                + (self.state_hashes.size() + self.pending_hashes.size() + self.right_filters.size()
                   + self.sort_keys.size()) * sizeof(uint64_t)
                + (self.state_boundaries.size() + self.pending_boundaries.size()) * sizeof(BoundaryWords)
                + (self.item_lists.size() + self.cell_groups_symbol.size() + self.cell_groups_list.size()
                   + self.cell_groups_size.size() + self.scratch.size()) * sizeof(int32_t)
                + self.cell_left_symbols.size() * sizeof(CellLeftSymbol)
                + self.cell_right_symbols.size() * sizeof(CellRightSymbol)
                + self.right_slots.size() * sizeof(RightSlot)
                + self.wide_lists.size() * sizeof(WideList) + self.wide_pairs.size() * sizeof(WidePair)
                + self.groups.size() * sizeof(Group) + self.heap.size() * sizeof(CkyHeapEntry)
                + self.hypotheses.size() * sizeof(Hypothesis)
                + (self.sort_entries.size() + self.kept_entries.size() + self.unary_entries.size())
                  * sizeof(CkySortEntry)
                + self.lm_cache.size() * sizeof(LmCacheEntry)
                + self.seen.bytes() + self.recombine_map.bytes() + self.lm_cache_index.bytes())

    @property
    def memory_bytes(self):
        """About the bytes the last sentence's search holds (what memory_budget_mb counts)."""
        return self._memory_bytes()

    # ---- reading the chart back (derivations, k-best, statistics)

    def roots(self):
        """(GOAL item ids over the whole sentence, their LM sentence-end scores: </s> after the item, whose
        first words the glue start scored after <s>), best inside first."""
        cdef int32_t lo, count, t, item
        cdef ChartState out
        cdef int32_t end_target[2]
        cdef const ChartState *root[1]
        end_target[0] = -1
        end_target[1] = self.eos_id
        if self.n == 0:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        lo = self.goal_list_lo[self.n]
        count = self.goal_list_n[self.n]
        ids = np.empty(count, dtype=np.int32)
        boundary = np.empty(count, dtype=np.float64)
        for t in range(count):
            item = self.item_lists[lo + t]
            ids[t] = item
            root[0] = &self.states[self.items[item].state_offset]
            boundary[t] = score_target(self.model, end_target, 2, root, &out, NULL)
            self.lm_queries += 1
            self.lm_queries_novel += 1
        return ids, boundary

    def export(self):
        """The chart as numpy arrays (items and edges), for derivations and k-best in Python."""
        cdef Py_ssize_t n_items = self.items.size(), n_edges = self.edges.size(), t
        item_symbol = np.empty(n_items, np.int32)
        item_cell = np.empty(n_items, np.int32)
        item_score = np.empty(n_items, np.float64)
        item_best_edge = np.empty(n_items, np.int32)
        item_first_edge = np.empty(n_items, np.int32)
        item_alive = np.empty(n_items, np.uint8)
        item_round = np.empty(n_items, np.int8)
        item_hash = np.empty(n_items, np.uint64)
        cdef int32_t[::1] i_symbol = item_symbol, i_cell = item_cell, i_best = item_best_edge, i_first = item_first_edge
        cdef double[::1] i_score = item_score
        cdef uint8_t[::1] i_alive = item_alive
        cdef int8_t[::1] i_round = item_round
        cdef uint64_t[::1] i_hash = item_hash
        cdef const Item *item
        edge_head = np.empty(n_edges, np.int32)
        edge_rule = np.empty(n_edges, np.int32)
        edge_tail0 = np.empty(n_edges, np.int32)
        edge_tail1 = np.empty(n_edges, np.int32)
        edge_score = np.empty(n_edges, np.float64)
        edge_lm = np.empty(n_edges, np.float64)
        edge_next = np.empty(n_edges, np.int32)
        cdef int32_t[::1] e_head = edge_head, e_rule = edge_rule, e_t0 = edge_tail0, e_t1 = edge_tail1, e_next = edge_next
        cdef double[::1] e_score = edge_score, e_lm = edge_lm
        cdef const Edge *edge
        with nogil:  # every column typed: no Python object per item or edge
            for t in range(n_items):
                item = &self.items[t]
                i_symbol[t] = item.symbol
                i_cell[t] = item.cell
                i_score[t] = item.score
                i_best[t] = item.best_edge
                i_first[t] = item.first_edge
                i_alive[t] = item.alive
                i_round[t] = item.round
                i_hash[t] = item.hash
            for t in range(n_edges):
                edge = &self.edges[t]
                e_head[t] = edge.head
                e_rule[t] = edge.rule
                e_t0[t] = edge.tail0
                e_t1[t] = edge.tail1
                e_score[t] = edge.score
                e_lm[t] = edge.lm
                e_next[t] = edge.next_edge
        return dict(item_symbol=item_symbol, item_cell=item_cell, item_score=item_score,
                    item_best_edge=item_best_edge, item_first_edge=item_first_edge, item_alive=item_alive,
                    item_round=item_round, item_hash=item_hash,
                    edge_head=edge_head, edge_rule=edge_rule, edge_tail0=edge_tail0, edge_tail1=edge_tail1,
                    edge_score=edge_score, edge_lm=edge_lm, edge_next=edge_next)

    def items_per_cell(self):
        """int32[n+1, n+1]: items left in cell (i, j) after pruning (GOAL items not counted)."""
        cdef int n1 = self.n + 1
        out = np.zeros((n1, n1), dtype=np.int32)
        cdef int32_t[:, ::1] view = out
        cdef int i, j
        for i in range(n1):
            for j in range(n1):
                view[i, j] = self.items_in_cell[i * n1 + j]
        return out

    def chart_cells(self):
        """int64[k, 4]: (start, length, items, edges) of every cell holding an item after pruning, by start
        then end: its items (GOAL items not counted, as items_per_cell) and the edges into its alive
        items (GOAL items' not counted), for heat maps."""
        cdef int n1 = self.n + 1, i, j, c, k = 0
        cdef Py_ssize_t t
        cdef vector[int32_t] edges_in_cell
        cdef const Item *head
        edges_in_cell.assign(n1 * n1, 0)
        with nogil:
            for t in range(<Py_ssize_t>self.edges.size()):
                head = &self.items[self.edges[t].head]
                if head.alive and head.symbol != self.goal_symbol:
                    edges_in_cell[head.cell] += 1
            for c in range(n1 * n1):
                k += self.items_in_cell[c] != 0
        out = np.empty((k, 4), dtype=np.int64)
        cdef int64_t[:, ::1] view = out
        k = 0
        for i in range(n1):
            for j in range(n1):
                c = i * n1 + j
                if self.items_in_cell[c] != 0:
                    view[k, 0] = i
                    view[k, 1] = j - i
                    view[k, 2] = self.items_in_cell[c]
                    view[k, 3] = edges_in_cell[c]
                    k += 1
        return out

    @property
    def n_items(self):
        return self.items.size()

    @property
    def n_edges(self):
        return self.edges.size()

    # ---- for tests: a cell's indexes of its right symbols (_chart_cells.pxd)

    def right_symbols_of_cell(self, int i, int j):
        """For tests: the last sentence's cell (i, j)'s CellRightSymbols as (symbol, list_lo, list_n) rows."""
        cdef int c = self._cell_index(i, j), t
        rows = [(self.cell_right_symbols[t].symbol, self.cell_right_symbols[t].list_lo,
                 self.cell_right_symbols[t].list_n)
                for t in range(self.cell_right_lo[c], self.cell_right_lo[c] + self.cell_right_n[c])]
        return rows

    def find_right_symbols(self, int i, int j, symbols):
        """For tests: per symbol of `symbols`, its row in right_symbols_of_cell(i, j) found through the
        cell's table (find_right_slot), or -1."""
        cdef int c = self._cell_index(i, j), r
        out = []
        for symbol in symbols:
            r = find_right_slot(self.right_slots.data() + self.cell_right_slots_lo[c], self.cell_right_bits[c], symbol)
            out.append(r - self.cell_right_lo[c] if r >= 0 else -1)
        return out

    def right_lists_of_cell(self, int i, int j, symbols):
        """For tests: per symbol of `symbols`, the (list_lo, list_n) that a key with that right child finds in
        the last sentence's cell (i, j) as _add_binary_groups looks it up (the cell's filter of right symbols,
        then its table), or None."""
        cdef int c = self._cell_index(i, j)
        cdef const RightSlot *slot
        cdef const uint64_t *filter = self.right_filters.data() + self.cell_right_filter_lo[c]
        out = []
        for symbol in symbols:
            slot = NULL
            if in_right_filter(filter, symbol):
                slot = find_right_entry(self.right_slots.data() + self.cell_right_slots_lo[c], self.cell_right_bits[c],
                                        symbol)
            out.append((slot.list_lo, slot.list_n) if slot != NULL else None)
        return out

    def wide_pairs_of_cell(self, int i, int j, int wide_bit, int32_t wide_symbol):
        """For tests: the WideList of the last sentence's cell (i, j) for wide_bit (whose wide left
        symbol is wide_symbol) as (rules_lo, n_rules, list_lo, list_n) rows; found now if no split
        needed it (None: the cell has no right symbols)."""
        cdef int c = self._cell_index(i, j), t
        cdef WideList *wide
        if not 0 <= wide_bit < WIDE_BITS:
            raise ValueError(f"wide bit {wide_bit} not in [0, {WIDE_BITS})")
        if self.cell_wide_lo[c] < 0:
            return None
        wide = &self.wide_lists[self.cell_wide_lo[c] + wide_bit]
        if wide.lo < 0:
            self._find_wide_pairs(<int64_t>wide_symbol * self.n_symbols, wide_bit, c)
            wide = &self.wide_lists[self.cell_wide_lo[c] + wide_bit]
        return [(self.wide_pairs[t].rules_lo, self.wide_pairs[t].n_rules, self.wide_pairs[t].list_lo,
                 self.wide_pairs[t].list_n) for t in range(wide.lo, wide.lo + wide.n)]

    cdef int _cell_index(self, int i, int j) except -1:
        if not 0 <= i < j <= self.n:
            raise ValueError(f"no cell ({i}, {j}) in a sentence of {self.n} words")
        return i * (self.n + 1) + j

    # ---- the cells, shortest spans first

    cdef int _build_cells(self) noexcept nogil:
        """Build every cell, shortest spans first, until the chart limit or the memory budget stops it."""
        cdef int n = self.n, i, length
        for length in range(1, n + 1):
            for i in range(0, n - length + 1):
                if self.chart_full:
                    return 0
                self._build_cell(i, i + length)
                if self.memory_budget and self._memory_bytes() > self.memory_budget:
                    self.over_budget = True
                    self.chart_full = True
        return 0

    cdef void _build_cell(self, int i, int j) noexcept nogil:
        cdef int n1 = self.n + 1
        cdef int c = i * n1 + j
        cdef int length = j - i
        cdef int k, r
        cdef int32_t run
        cdef int32_t first_item = self.items.size()
        self.recombine_map.clear_fitted()  # a table the size of the last cell's items: few cache lines
        if length <= self.max_span:
            if length == 1 and self.oov_at[i]:
                self._add_oov_items(i, c)
            self.groups.clear()
            run = self.run_at[c]
            if run >= 0:
                self._add_single_group(run, 0, 1)
            for k in range(i + 1, j):
                self._add_binary_groups(i * n1 + k, k * n1 + j)
            self._search(c, 0)
            for r in range(1, self.max_unary_depth + 1):
                self.groups.clear()
                if not self._add_unary_groups(first_item, r - 1):
                    break
                self._search(c, r)
            self._finish_cell(c, first_item)
        if i == 0:
            self._build_goal(j)

    # ---- items and edges: recombination

    cdef uint64_t _item_hash(self, int32_t symbol, const uint64_t *state_hashes, int n_states) noexcept nogil:
        cdef uint64_t h = cky_mix(<uint64_t>0x2545F491, <uint64_t>symbol)
        cdef int s
        for s in range(n_states):
            h = cky_mix(h, state_hashes[s])
        return h

    cdef bint _same_states(self, const Item *item, int32_t symbol, const ChartState *states, int n_states) noexcept nogil:
        cdef int s
        if item.symbol != symbol or item.n_states != n_states:
            return False
        for s in range(n_states):
            if not (self.states[item.state_offset + s] == states[s]):
                return False
        return True

    cdef int32_t _add_edge(self, int32_t head, int32_t rule, int32_t tail0, int32_t tail1,
                           double score, float lm) noexcept nogil:
        cdef Edge *edge = cky_append(self.edges)
        edge.head = head
        edge.rule = rule
        edge.tail0 = tail0
        edge.tail1 = tail1
        edge.score = score
        edge.lm = lm
        edge.next_edge = self.items[head].first_edge
        self.items[head].first_edge = self.edges.size() - 1
        return self.edges.size() - 1

    cdef void _add_hypothesis(self, int c, int round, Hypothesis *hyp) noexcept nogil:
        """Recombine a popped hypothesis into its item (new or existing) as one more edge."""
        cdef Group *group = &self.groups[hyp.group]
        cdef int32_t tail0 = self.item_lists[group.left_lo + hyp.left_rank]
        cdef int32_t tail1 = self.item_lists[group.right_lo + hyp.right_rank]
        cdef double tails = 0.0
        if tail0 >= 0:
            tails += self.items[tail0].score
        if tail1 >= 0:
            tails += self.items[tail1].score
        self._add_hypothesis_over(c, round, hyp, tail0, tail1, tails)

    cdef void _add_hypothesis_over(self, int c, int round, Hypothesis *hyp, int32_t tail0, int32_t tail1,
                                   double tails) noexcept nogil:
        """_add_hypothesis of a hypothesis whose tail items (its group's items of its ranks, -1: none) and
        their summed inside scores (0.0, then the left's, then the right's) the caller has at hand."""
        cdef const ChartState *hyp_states = &self.pending_states[hyp.state_offset]
        cdef uint64_t h = self._item_hash(hyp.lhs, &self.pending_hashes[hyp.state_offset],
                                          0 if self.recombine_on_symbol else hyp.n_states)
        cdef int32_t found = -1, candidate, item_id, e, s
        cdef Item *item
        cdef int32_t *chain = self.recombine_map.find(h)
        cdef size_t bounds = 0
        if self.items.size() + self.edges.size() >= self.chart_limit:
            self.chart_full = True
            return
        if self.memory_budget and (self.edges.size() & (MEMORY_CHECK_EDGES - 1)) == 0 and not self.chart_full \
                and self._memory_bytes() > self.memory_budget:
            self.over_budget = True
            self.chart_full = True
        if self.chart_full:
            return
        if self.count_minimized_recombinations:
            bounds = self._hypothesis_boundaries(c, hyp, tail0, tail1)
        if chain != NULL:
            candidate = chain[0]
            while candidate >= 0:
                if self.items[candidate].round == round and (
                        self.items[candidate].symbol == hyp.lhs if self.recombine_on_symbol
                        else self._same_states(&self.items[candidate], hyp.lhs, hyp_states, hyp.n_states)):
                    found = candidate
                    break
                candidate = self.items[candidate].next_same_hash
        if found >= 0:
            self.recombinations += 1
            if self.count_minimized_recombinations and not self.recombine_on_symbol:
                for s in range(hyp.n_states):
                    if not same_boundaries(&self.state_boundaries[self.items[found].state_offset + s],
                                           &self.pending_boundaries[bounds + s]):
                        self.lm_state_minimized_recombinations += 1
                        break
        else:
            item = cky_append(self.items)
            item.symbol = hyp.lhs
            item.cell = c
            item.state_offset = self.states.size()
            item.n_states = hyp.n_states
            item.round = round
            item.alive = 1
            item.score = -INFINITY
            item.best_edge = -1
            item.first_edge = -1
            item.hash = h
            item.next_same_hash = chain[0] if chain != NULL else -1
            for s in range(hyp.n_states):
                self.states.push_back(self.pending_states[hyp.state_offset + s])
                self.state_hashes.push_back(self.pending_hashes[hyp.state_offset + s])
                if self.count_minimized_recombinations:
                    self.state_boundaries.push_back(self.pending_boundaries[bounds + s])
            found = self.items.size() - 1
            self.recombine_map.set(h, found)
        e = self._add_edge(found, hyp.rule, tail0, tail1, hyp.score - tails, hyp.lm)
        if hyp.score > self.items[found].score:
            self.items[found].score = hyp.score
            self.items[found].best_edge = e
            if self.recombine_on_symbol:  # the item's LM context e^1 is its best member's
                for s in range(hyp.n_states):
                    self.states[self.items[found].state_offset + s] = hyp_states[s]
                    self.state_hashes[self.items[found].state_offset + s] = self.pending_hashes[hyp.state_offset + s]
                    if self.count_minimized_recombinations:
                        self.state_boundaries[self.items[found].state_offset + s] = self.pending_boundaries[bounds + s]

    cdef size_t _hypothesis_boundaries(self, int c, const Hypothesis *hyp, int32_t tail0,
                                       int32_t tail1) noexcept nogil:
        """The unminimized boundary words of the hypothesis's states, from its target side and its tails'
        boundaries (each tail item's are those of the hypothesis that made it): written to
        pending_boundaries[b : b + hyp.n_states] after the tails' own; returns b."""
        cdef size_t b
        cdef int32_t s, side, tail, word
        cdef int64_t t_lo, t_hi
        self.pending_boundaries.clear()
        for side in range(2):
            tail = tail0 if side == 0 else tail1
            if tail >= 0:
                for s in range(self.items[tail].n_states):
                    self.pending_boundaries.push_back(self.state_boundaries[self.items[tail].state_offset + s])
        b = self.pending_boundaries.size()
        self.pending_boundaries.resize(b + hyp.n_states)
        if hyp.rule == EDGE_OOV:
            word = self.words_lm[c // (self.n + 1)]
            concatenate_boundaries(self.boundary_length, &word, 1, NULL, &self.pending_boundaries[b])
        elif hyp.rule == EDGE_GLUE_START:
            concatenate_boundaries(self.boundary_length, self.glue_start_target, 2, self.pending_boundaries.data(),
                                   &self.pending_boundaries[b])
        elif hyp.rule >= 0 and self.rule_carries[hyp.rule]:
            for s in range(hyp.n_states):  # the children's blocks, carried as they are
                self.pending_boundaries[b + s] = self.pending_boundaries[s]
        elif hyp.rule == EDGE_GLUE_CONCAT:
            concatenate_boundaries(self.boundary_length, CKY_GLUE_CONCAT_TARGET, 2, self.pending_boundaries.data(),
                                   &self.pending_boundaries[b])
        else:
            t_lo = self.rule_target_offsets[hyp.rule]
            t_hi = self.rule_target_offsets[hyp.rule + 1]
            concatenate_boundaries(self.boundary_length, &self.rule_target_lm[t_lo] if t_hi > t_lo else NULL,
                                   t_hi - t_lo, self.pending_boundaries.data(), &self.pending_boundaries[b])
        return b

    cdef void _add_oov_items(self, int i, int c) noexcept nogil:
        cdef Hypothesis hyp
        cdef Group group
        cdef int t
        cdef int32_t word = self.words_lm[i]
        self.pending_states.clear()
        self.pending_states.resize(1)
        self.pending_hashes.clear()
        self.pending_hashes.resize(1)
        self.child_pointers.clear()
        self.child_hashes.clear()
        cdef float lm = self._score(&word, 1, cky_mix(<uint64_t>0xABCDEF, <uint64_t>word), &self.pending_states[0],
                                    &self.pending_hashes[0])
        # A group with no children so that _add_hypothesis finds no tails.
        group.kind = GROUP_RULES
        group.left_lo = 0
        group.n_left = 1
        group.right_lo = 0
        group.n_right = 1
        self.groups.clear()
        self.groups.push_back(group)
        for t in range(self.oov_symbols.shape[0]):
            hyp.group = 0
            hyp.rule_rank = 0
            hyp.left_rank = 0
            hyp.right_rank = 0
            hyp.state_offset = 0
            hyp.n_states = 1
            hyp.lhs = self.oov_symbols[t]
            hyp.rule = EDGE_OOV
            hyp.lm = lm
            hyp.score = self.weight_oov + self.weight_word_count + self.weight_lm * lm
            self.edges_proposed += 1
            self._add_hypothesis(c, 0, &hyp)
            self.edges[self.edges.size() - 1].tail0 = i  # the source position
        self.groups.clear()

    # ---- LM scoring, cached per sentence

    cdef float _score(self, const int32_t *target, Py_ssize_t length, uint64_t target_hash,
                      ChartState *out, uint64_t *out_hash) noexcept nogil:
        """Score a target side over self.child_pointers (KenLM RuleScore), through the cache;
        the new state goes to out and its hash to out_hash."""
        cdef unsigned long long calls = length
        cdef uint64_t h = target_hash
        cdef size_t t
        cdef LmCacheEntry entry
        cdef float lm
        cdef int32_t *cached
        if length > 0 and (target[0] < 0 or target == self.glue_start_target):
            calls -= 1  # the first child is copied, not scored; <s> is context, not a query
        self.lm_queries += calls
        for t in range(self.child_hashes.size()):
            h = cky_mix(h, self.child_hashes[t])
        cached = self.lm_cache_index.find(h)
        if cached != NULL:
            out[0] = self.lm_cache[cached[0]].state
            out_hash[0] = self.lm_cache[cached[0]].state_hash
            return self.lm_cache[cached[0]].lm
        if length == 0:
            empty_chart_state(out)
            lm = 0.0
        else:
            lm = score_target(self.model, target, length, self.child_pointers.data(), out, NULL)
        self.lm_queries_novel += calls
        out_hash[0] = chart_state_hash(out)
        if self.lm_cache.size() < LM_CACHE_ENTRIES:  # bounded: memory stays flat at large pop limits
            entry.lm = lm
            entry.state = out[0]
            entry.state_hash = out_hash[0]
            self.lm_cache_index.set(h, self.lm_cache.size())
            self.lm_cache.push_back(entry)
        return lm

    # ---- a cell's cubes: its split points' binary rule keys, its unary rounds

    cdef void _push_group(self, int8_t kind, int64_t rules_lo, int32_t n_rules, int8_t single,
                          int32_t left_lo, int32_t n_left, int32_t right_lo, int32_t n_right,
                          double fixed_score) noexcept nogil:
        append_group(&self.groups, kind, self.goal_symbol, rules_lo, n_rules, single, left_lo, n_left,
                     right_lo, n_right, fixed_score)

    cdef void _add_single_group(self, int32_t child, int32_t list_lo, int32_t list_n) noexcept nogil:
        if child < 0 or child >= self.single_range.shape[0]:
            return
        cdef int64_t lo = self.single_range[child, 0], hi = self.single_range[child, 1]
        if hi > lo:
            self._push_group(GROUP_RULES, lo, <int32_t>(hi - lo), 1, list_lo, list_n, 0, 1, 0.0)

    cdef int64_t _find_pair_key(self, int64_t lo, int64_t hi, int32_t right) noexcept nogil:
        """The key with right child `right` among pair_right_keys[lo:hi] (one left symbol's), or -1."""
        cdef int64_t end = hi, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.pair_right_keys[mid].right < right:
                lo = mid + 1
            else:
                hi = mid
        if lo < end and self.pair_right_keys[lo].right == right:
            return lo
        return -1

    cdef int64_t _gallop(self, int64_t lo, int64_t hi, int32_t right) noexcept nogil:
        """The first index in [lo, hi) of pair_right_keys whose right child is >= right (hi if none),
        searching forward from lo with doubling steps, then by bisection."""
        cdef int64_t step = 1, bound = lo, mid
        while bound < hi and self.pair_right_keys[bound].right < right:
            lo = bound + 1
            bound = lo + step
            step <<= 1
        if bound > hi:
            bound = hi
        while lo < bound:
            mid = (lo + bound) >> 1
            if self.pair_right_keys[mid].right < right:
                lo = mid + 1
            else:
                bound = mid
        return lo

    cdef void _add_binary_groups(self, int left_cell, int right_cell) noexcept nogil:
        """One group per binary rule key whose children are present in the two cells: for each left
        symbol (the cell's run first, then the cell's CellLeftSymbols), either its keys are looked
        up among the right cell's symbols (its filter, then its table), or (more keys than the right cell
        has symbols) the right symbols among its keys: for a wide left symbol, those whose mask has its
        bit, with their entries of wide_rules; for another, by galloping through its keys.
        The groups come in that order (the branch is chosen by the right cell's count of symbols,
        right children or not), which decides cube pruning's ties: keep it."""
        cdef int32_t left_run = self.run_at[left_cell], right_run = self.run_at[right_cell]
        cdef int n_left = self.cell_left_n[left_cell], n_right = self.cell_right_n[right_cell]
        cdef int n_right_symbols = self.cell_group_n[right_cell] + (1 if right_run >= 0 else 0)
        cdef int first_right = self.cell_right_lo[right_cell]
        cdef int a_index, b_index, r
        cdef int8_t wide_bit
        cdef int32_t a, b, left_lo, left_n, right_lo, right_n
        cdef int64_t lo, hi, q, key_base, cursor
        cdef const CellLeftSymbol *left
        cdef const CellRightSymbol *right
        cdef const RightSlot *right_slots
        cdef const RightSlot *slot
        cdef const uint64_t *right_filter = self.right_filters.data() + self.cell_right_filter_lo[right_cell]
        cdef const WideList *wide_lists
        cdef int32_t wide_lo
        cdef int right_bits = self.cell_right_bits[right_cell]
        if (n_right == 0 and right_run < 0) or (n_left == 0 and left_run < 0):
            return
        right_slots = self.right_slots.data() + self.cell_right_slots_lo[right_cell]
        if 0 <= right_run < self.n_symbols:
            cky_prefetch(&self.symbol_right_mask[right_run])
        # the first keys of every left symbol, requested at once (each is a cache miss otherwise)
        for a_index in range(n_left):
            cky_prefetch(&self.pair_right_keys[self.cell_left_symbols[self.cell_left_lo[left_cell] + a_index].keys_lo])
        # and the first WidePair of each wide left symbol's WideList in the right cell found before: the
        # WideLists are read here one after another (independent loads that overlap), not each just before
        # its pairs
        if self.cell_wide_lo[right_cell] >= 0:
            wide_lists = self.wide_lists.data() + self.cell_wide_lo[right_cell]
            for a_index in range(n_left):
                left = &self.cell_left_symbols[self.cell_left_lo[left_cell] + a_index]
                if left.wide_bit >= 0 and left.keys_hi - left.keys_lo > n_right_symbols:
                    wide_lo = wide_lists[left.wide_bit].lo
                    if wide_lo >= 0 and wide_lists[left.wide_bit].n > 0:
                        cky_prefetch(&self.wide_pairs[wide_lo])
        for a_index in range(-1, n_left):
            if a_index < 0:
                if left_run < 0 or left_run >= self.n_symbols:
                    continue
                a = left_run
                left_lo = 0
                left_n = 1
                lo = self.pair_left_offsets[a]
                hi = self.pair_left_offsets[a + 1]
                if hi <= lo:
                    continue
                wide_bit = self.symbol_wide_bit[a]
            else:
                left = &self.cell_left_symbols[self.cell_left_lo[left_cell] + a_index]
                a = left.symbol
                left_lo = left.list_lo
                left_n = left.list_n
                lo = left.keys_lo
                hi = left.keys_hi
                wide_bit = left.wide_bit
            key_base = <int64_t>a * self.n_symbols
            if hi - lo <= n_right_symbols:
                for q in range(lo, hi):
                    b = self.pair_right_keys[q].right
                    if b == right_run:
                        right_lo = 0
                        right_n = 1
                    else:
                        if not in_right_filter(right_filter, b):
                            continue
                        slot = find_right_entry(right_slots, right_bits, b)
                        if slot == NULL:
                            continue
                        right_lo = slot.list_lo
                        right_n = slot.list_n
                    append_group(&self.groups, GROUP_RULES, self.goal_symbol, self.pair_right_keys[q].rules_lo,
                                 self.pair_right_keys[q + 1].rules_lo - self.pair_right_keys[q].rules_lo,
                                 0, left_lo, left_n, right_lo, right_n, 0.0)
            elif wide_bit >= 0:
                # A wide left symbol: the right symbols (the run, if any, first, then ascending,
                # as below) whose masks say they pair with it, with their entries of wide_rules.
                self._add_wide_groups(key_base, wide_bit, left_lo, left_n, right_run, right_cell)
            else:
                # Right symbols ascend (the run, if any, first: it is looked up on its own), so
                # their keys are found by galloping forward through the sorted keys of `a`.
                cursor = lo
                for b_index in range(-1, n_right):
                    if b_index < 0:
                        if right_run < 0:
                            continue
                        b = right_run
                        right_lo = 0
                        right_n = 1
                        q = self._find_pair_key(lo, hi, b)
                    else:
                        if cursor >= hi:
                            break
                        right = &self.cell_right_symbols[first_right + b_index]
                        b = right.symbol
                        right_lo = right.list_lo
                        right_n = right.list_n
                        cursor = self._gallop(cursor, hi, b)
                        q = cursor if cursor < hi and self.pair_right_keys[cursor].right == b else -1
                    if q >= 0:
                        append_group(&self.groups, GROUP_RULES, self.goal_symbol, self.pair_right_keys[q].rules_lo,
                                     self.pair_right_keys[q + 1].rules_lo - self.pair_right_keys[q].rules_lo,
                                     0, left_lo, left_n, right_lo, right_n, 0.0)

    cdef void _add_wide_groups(self, int64_t key_base, int8_t wide_bit, int32_t left_lo, int32_t left_n,
                               int32_t right_run, int right_cell) noexcept nogil:
        """The groups of one wide left symbol (its keys start at key_base; bit wide_bit of the right
        masks) with the run of right_cell, then each of its CellRightSymbols (ascending). The latter are
        the cell's WideList for the bit: found (_find_wide_pairs) the first time, read every later time
        the cell is the right child of a cell with this wide left symbol."""
        cdef const WideRules *entry
        cdef const WidePair *pair
        cdef WideList *wide
        cdef int32_t t, lo, n
        cdef uint64_t run_mask
        if 0 <= right_run < self.n_symbols:
            run_mask = self.symbol_right_mask[right_run]
            if (run_mask >> wide_bit) & 1:
                entry = &self.wide_rules[self.symbol_wide_offset[right_run] + wide_rank(run_mask, wide_bit)]
                append_group(&self.groups, GROUP_RULES, self.goal_symbol, entry.rules_lo, entry.n_rules, 0,
                             left_lo, left_n, 0, 1, 0.0)
        if self.cell_wide_lo[right_cell] < 0:
            return
        wide = &self.wide_lists[self.cell_wide_lo[right_cell] + wide_bit]
        if wide.lo < 0:
            self._find_wide_pairs(key_base, wide_bit, right_cell)
            wide = &self.wide_lists[self.cell_wide_lo[right_cell] + wide_bit]
        lo = wide.lo
        n = wide.n
        for t in range(n):
            pair = &self.wide_pairs[lo + t]
            append_group(&self.groups, GROUP_RULES, self.goal_symbol, pair.rules_lo, pair.n_rules, 0,
                         left_lo, left_n, pair.list_lo, pair.list_n, 0.0)

    cdef void _find_wide_pairs(self, int64_t key_base, int8_t wide_bit, int right_cell) noexcept nogil:
        """The WideList of (right_cell, wide_bit): the right symbols whose mask has the bit are the
        keys; each key's rules are its right symbol's entry of wide_rules for the bit (wide_rank), next to
        its entries for the other wide symbols (read by them too)."""
        cdef int n_right = self.cell_right_n[right_cell], first = self.cell_right_lo[right_cell]
        cdef int t
        cdef const WideRules *entry
        cdef const CellRightSymbol *right
        cdef WidePair *pair
        cdef int32_t lo = self.wide_pairs.size()
        for t in range(n_right):
            right = &self.cell_right_symbols[first + t]
            if (right.left_mask >> wide_bit) & 1:
                entry = &self.wide_rules[right.wide_offset + wide_rank(right.left_mask, wide_bit)]
                pair = cky_append(self.wide_pairs)
                pair.rules_lo = entry.rules_lo
                pair.n_rules = entry.n_rules
                pair.list_lo = right.list_lo
                pair.list_n = right.list_n
        self.wide_lists[self.cell_wide_lo[right_cell] + wide_bit].lo = lo
        self.wide_lists[self.cell_wide_lo[right_cell] + wide_bit].n = self.wide_pairs.size() - lo

    cdef bint _add_unary_groups(self, int32_t first_item, int round) noexcept nogil:
        """Groups of unary rules over the items the previous round made in this cell."""
        cdef vector[CkySortEntry] *entries = &self.unary_entries
        cdef CkySortEntry *entry
        cdef int32_t t, start, symbol, list_lo
        cdef size_t p, q
        entries.clear()
        for t in range(first_item, self.items.size()):
            if self.items[t].round == round and self.items[t].alive:
                entry = cky_append(entries[0])
                entry.symbol = self.items[t].symbol
                entry.score = self.items[t].score
                entry.id = t
        if entries.size() == 0:
            return False
        self.item_sorter.sort(entries.data(), entries.size())
        # each symbol's range of one-child rules (a cache miss each), requested at once
        for p in range(entries.size()):
            if p == 0 or entries[0][p].symbol != entries[0][p - 1].symbol:
                if 0 <= entries[0][p].symbol < self.single_range.shape[0]:
                    cky_prefetch(&self.single_range[entries[0][p].symbol, 0])
        p = 0
        while p < entries.size():
            symbol = entries[0][p].symbol
            q = p
            list_lo = self.item_lists.size()
            while q < entries.size() and entries[0][q].symbol == symbol:
                self.item_lists.push_back(entries[0][q].id)
                q += 1
            self._add_single_group(symbol, list_lo, <int32_t>(q - p))
            p = q
        return self.groups.size() > 0

    # ---- cube pruning (Chiang 2007)

    cdef void _evaluate(self, int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank,
                        Hypothesis *hyp) noexcept nogil:
        """Score one hypothesis of cube g (rule, left and right ranks); its states go to pending_states."""
        cdef Group *group = &self.groups[g]
        cdef int32_t left = self.item_lists[group.left_lo + left_rank]
        cdef int32_t right = self.item_lists[group.right_lo + right_rank]
        cdef double base = 0.0
        cdef int32_t r, s
        cdef int64_t t_lo, t_hi
        cdef float lm = 0.0
        cdef ChartState empty
        hyp.group = g
        hyp.rule_rank = rule_rank
        hyp.left_rank = left_rank
        hyp.right_rank = right_rank
        hyp.state_offset = self.pending_states.size()
        self.child_pointers.clear()
        self.child_hashes.clear()
        if left >= 0:
            base += self.items[left].score
            for s in range(self.items[left].n_states):
                self.child_pointers.push_back(&self.states[self.items[left].state_offset + s])
                self.child_hashes.push_back(self.state_hashes[self.items[left].state_offset + s])
        if right >= 0:
            base += self.items[right].score
            for s in range(self.items[right].n_states):
                self.child_pointers.push_back(&self.states[self.items[right].state_offset + s])
                self.child_hashes.push_back(self.state_hashes[self.items[right].state_offset + s])
        if group.kind == GROUP_RULES:
            if group.single:
                r = self.single_rules_sorted[group.rules_lo + rule_rank]
            else:
                r = self.pair_rules_sorted[group.rules_lo + rule_rank]
            hyp.rule = r
            hyp.lhs = self.rule_lhs[r]
            if self.rule_carries[r]:  # monolingual virtual: carry every block, score later
                for s in range(self.child_pointers.size()):
                    self.pending_states.push_back(self.child_pointers[s][0])
                    self.pending_hashes.push_back(self.child_hashes[s])
                hyp.n_states = <int16_t>self.child_pointers.size()
            else:
                self.pending_states.push_back(empty)
                self.pending_hashes.push_back(0)
                t_lo = self.rule_target_offsets[r]
                t_hi = self.rule_target_offsets[r + 1]
                lm = self._score(&self.rule_target_lm[t_lo] if t_hi > t_lo else NULL, t_hi - t_lo,
                                 self.rule_target_hash[r], &self.pending_states[hyp.state_offset],
                                 &self.pending_hashes[hyp.state_offset])
                hyp.n_states = 1
            hyp.score = base + self.rule_score[r] + self.weight_lm * lm
        elif group.kind == GROUP_GLUE_START:  # <s> X: X's first words get the sentence-start context
            hyp.rule = EDGE_GLUE_START
            hyp.lhs = self.goal_symbol
            self.pending_states.push_back(empty)
            self.pending_hashes.push_back(0)
            lm = self._score(self.glue_start_target, 2, CKY_GLUE_START_HASH, &self.pending_states[hyp.state_offset],
                             &self.pending_hashes[hyp.state_offset])
            hyp.n_states = 1
            hyp.score = base + group.fixed_score + self.weight_lm * lm
        else:
            hyp.rule = EDGE_GLUE_CONCAT
            hyp.lhs = self.goal_symbol
            self.pending_states.push_back(empty)
            self.pending_hashes.push_back(0)
            lm = self._score(CKY_GLUE_CONCAT_TARGET, 2, CKY_GLUE_CONCAT_HASH, &self.pending_states[hyp.state_offset],
                             &self.pending_hashes[hyp.state_offset])
            hyp.n_states = 1
            hyp.score = base + group.fixed_score + self.weight_lm * lm
        hyp.lm = lm
        self.edges_proposed += 1

    cdef void _push_corner(self, int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank) noexcept nogil:
        cdef Group *group = &self.groups[g]
        cdef Hypothesis *hyp
        cdef uint64_t key
        if rule_rank >= group.n_rules or left_rank >= group.n_left or right_rank >= group.n_right:
            return
        key = corner_key(g, rule_rank, left_rank, right_rank)
        if not self.seen.set(key, 0):
            return
        hyp = cky_append(self.hypotheses)
        self._evaluate(g, rule_rank, left_rank, right_rank, hyp)
        cky_heap_push(self.heap, hyp.score, self.hypotheses.size() - 1)

    cdef void _search(self, int c, int round) noexcept nogil:
        """Turn the current groups' hypotheses into items: all of them, or the best by cube pruning
        (_cube): one cube over all groups with pop_limit pops (pop_count = "all"), or with pop_count =
        "real" the groups split by the kind of their rules' lhs (_split_groups_by_kind), the virtual
        ones with virtual_pop_limit pops and the real ones with pop_limit (the two are independent:
        the items of one kind are never the children of the other in the same cell and round)."""
        cdef int32_t g, rr, ar, br, n_virtual
        cdef Hypothesis hyp
        cdef int limit = self.pop_limit
        cdef Group *group
        if self.groups.size() == 0:
            return
        if round > 0 and self.unary_pop_limit >= 0:
            limit = self.unary_pop_limit
        if self.exhaustive:
            self.pending_states.clear()
            self.pending_hashes.clear()
            for g in range(self.groups.size()):
                group = &self.groups[g]
                for rr in range(group.n_rules):
                    for ar in range(group.n_left):
                        for br in range(group.n_right):
                            self.pending_states.clear()
                            self.pending_hashes.clear()
                            self._evaluate(g, rr, ar, br, &hyp)
                            self._add_hypothesis(c, round, &hyp)
                            if self.chart_full:
                                return
                            group = &self.groups[g]
            return
        if self.pop_count_real:
            n_virtual = self._split_groups_by_kind()
            self._search_groups(c, round, 0, n_virtual, self.virtual_pop_limit)
            self._search_groups(c, round, n_virtual, <int32_t>self.groups.size(), limit)
        else:
            self._search_groups(c, round, 0, <int32_t>self.groups.size(), limit)

    cdef void _search_groups(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil:
        """The best hypotheses of groups[g_lo:g_hi] with `limit` pops: cube pruning here; a subclass
        with another search inside a cell (the incremental search) overrides this alone."""
        self._cube(c, round, g_lo, g_hi, limit)

    cdef int32_t _split_groups_by_kind(self) noexcept nogil:
        """Split every rule group whose rules make both real and virtual items into a real and a virtual
        group (a key's rules with real lhs come first under pop_count = "real": the first virtual one is
        found by bisection), and order the groups virtual first, each kind in its order before; returns
        the number of virtual groups. Glue groups are real."""
        cdef vector[Group] virtual_groups, real_groups
        cdef Group group, part
        cdef int32_t lo, hi, mid, r
        cdef size_t g
        for g in range(self.groups.size()):
            group = self.groups[g]
            if group.kind != GROUP_RULES:
                real_groups.push_back(group)
                continue
            lo = 0
            hi = group.n_rules
            while lo < hi:
                mid = (lo + hi) >> 1
                r = (self.single_rules_sorted[group.rules_lo + mid] if group.single
                     else self.pair_rules_sorted[group.rules_lo + mid])
                if self.symbol_is_real[self.rule_lhs[r]]:
                    lo = mid + 1
                else:
                    hi = mid
            if lo > 0:
                part = group
                part.n_rules = lo
                real_groups.push_back(part)
            if lo < group.n_rules:
                part = group
                part.rules_lo = group.rules_lo + lo
                part.n_rules = group.n_rules - lo
                virtual_groups.push_back(part)
        self.groups.clear()
        for g in range(virtual_groups.size()):
            self.groups.push_back(virtual_groups[g])
        for g in range(real_groups.size()):
            self.groups.push_back(real_groups[g])
        return <int32_t>virtual_groups.size()

    cdef void _cube(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil:
        """Cube pruning (Chiang 2007) over groups[g_lo:g_hi]: at most `limit` pops (0: no limit), best
        first; it also stops at round_item_limit items made here and at a pop more than
        round_score_beam below the best pop so far (cky_round_stops; the heap pops best first, so what
        is left is hardly better)."""
        cdef int32_t g, first_item = self.items.size()
        cdef Hypothesis hyp
        cdef int pops = 0
        cdef double best_score = 0.0
        if g_hi <= g_lo:
            return
        self.pending_states.clear()
        self.pending_hashes.clear()
        self.heap.clear()
        self.hypotheses.clear()
        self.seen.clear()
        for g in range(g_lo, g_hi):
            self._push_corner(g, 0, 0, 0)
        while self.heap.size() > 0 and (limit <= 0 or pops < limit) and not self.chart_full:
            if self.round_item_limit > 0 and <long long>self.items.size() - first_item >= self.round_item_limit:
                break
            hyp = self.hypotheses[cky_heap_pop(self.heap)]
            if cky_round_stops(hyp.score, pops, &best_score, self.round_score_beam):
                break
            self._add_hypothesis(c, round, &hyp)
            pops += 1
            self._push_corner(hyp.group, hyp.rule_rank + 1, hyp.left_rank, hyp.right_rank)
            self._push_corner(hyp.group, hyp.rule_rank, hyp.left_rank + 1, hyp.right_rank)
            self._push_corner(hyp.group, hyp.rule_rank, hyp.left_rank, hyp.right_rank + 1)
        self.heap.clear()

    # ---- finishing a cell: beams, sorted lists, its indexes for later cells

    cdef int32_t _prune_and_sort(self, int32_t first_item, int32_t end_item, bint goal,
                                 vector[CkySortEntry] *kept) noexcept nogil:
        """Apply the beams; `kept` gets the survivors sorted by (symbol, score) (ties: older item
        first, as cky_sort_entries orders them). Without beams all survive: one sort. With them, the
        items by score, then the survivors sorted stably by symbol as (symbol, rank by score) integers.

        Items equal in (X, e) from different unary rounds stay distinct (merging them
        could close a unary cycle in the hypergraph); parents see all of them."""
        cdef vector[CkySortEntry] *entries = &self.sort_entries
        cdef vector[uint64_t] *keys = &self.sort_keys
        cdef CkySortEntry entry
        cdef int32_t t, kept_count = 0, e
        cdef double best = -INFINITY
        cdef int32_t item_id
        cdef bint beams = self.beam_size > 0 or self.beam_threshold > 0
        entries.clear()
        for t in range(first_item, end_item):
            if (self.items[t].symbol == self.goal_symbol) != goal or not self.items[t].alive:
                continue
            entry.symbol = 0 if beams else self.items[t].symbol
            entry.score = self.items[t].score
            entry.id = t
            entries.push_back(entry)
        self.item_sorter.sort(entries.data(), entries.size())  # by (symbol, score); with beams: best first
        if not beams:  # every item survives (kept takes the sorted entries; entries, kept's old buffer)
            kept.swap(entries[0])
        else:
            keys.clear()
            for t in range(entries.size()):
                item_id = entries[0][t].id
                if kept_count == 0:
                    best = self.items[item_id].score
                if (self.beam_size > 0 and kept_count >= self.beam_size) or (
                        self.beam_threshold > 0 and self.items[item_id].score < best - self.beam_threshold):
                    self.items[item_id].alive = 0
                    continue
                keys.push_back((<uint64_t><uint32_t>self.items[item_id].symbol << 32) | <uint64_t>kept_count)
                entries[0][kept_count] = entries[0][t]
                entries[0][kept_count].symbol = self.items[item_id].symbol
                kept_count += 1
            cpp_sort(keys.begin(), keys.end())
            kept.resize(kept_count)
            for t in range(kept_count):
                kept[0][t] = entries[0][<uint32_t>keys[0][t]]  # the low 32 bits: the rank
        for t in range(kept.size()):
            e = self.items[kept[0][t].id].first_edge
            while e >= 0:
                self.edges_kept += 1
                e = self.edges[e].next_edge
        return kept.size()

    cdef void _finish_cell(self, int c, int32_t first_item) noexcept nogil:
        cdef vector[CkySortEntry] *kept_entries = &self.kept_entries
        cdef const CkySortEntry *kept
        cdef size_t n_kept
        cdef WideList unfound
        unfound.lo = -1
        unfound.n = 0
        cdef size_t p, q
        cdef int32_t symbol, g
        cdef CellLeftSymbol left
        cdef CellRightSymbol right
        self.items_in_cell[c] = self._prune_and_sort(first_item, self.items.size(), False, kept_entries)
        kept = kept_entries.data()
        n_kept = kept_entries.size()
        self.cell_group_lo[c] = self.cell_groups_symbol.size()
        p = 0
        while p < n_kept:
            symbol = kept[p].symbol
            self.cell_groups_symbol.push_back(symbol)
            self.cell_groups_list.push_back(self.item_lists.size())
            q = p
            while q < n_kept and kept[q].symbol == symbol:
                self.item_lists.push_back(kept[q].id)
                q += 1
            self.cell_groups_size.push_back(<int32_t>(q - p))
            p = q
        self.cell_group_n[c] = self.cell_groups_symbol.size() - self.cell_group_lo[c]
        # what binary rules read of the cell's symbols (every later cell it is a child of): four arrays by
        # symbol (a cache miss each), requested at once for all of them
        for g in range(self.cell_group_lo[c], self.cell_group_lo[c] + self.cell_group_n[c]):
            symbol = self.cell_groups_symbol[g]
            if symbol < self.n_symbols:
                cky_prefetch(&self.pair_left_offsets[symbol])
                cky_prefetch(&self.symbol_is_right_child[symbol])
                cky_prefetch(&self.symbol_right_mask[symbol])
                cky_prefetch(&self.symbol_wide_bit[symbol])
                cky_prefetch(&self.symbol_wide_offset[symbol])
        self.cell_left_lo[c] = self.cell_left_symbols.size()
        self.cell_right_lo[c] = self.cell_right_symbols.size()
        for g in range(self.cell_group_lo[c], self.cell_group_lo[c] + self.cell_group_n[c]):
            symbol = self.cell_groups_symbol[g]
            if symbol >= self.n_symbols:
                continue
            if self.pair_left_offsets[symbol + 1] > self.pair_left_offsets[symbol]:
                left.symbol = symbol
                left.list_lo = self.cell_groups_list[g]
                left.list_n = self.cell_groups_size[g]
                left.wide_bit = self.symbol_wide_bit[symbol]
                left.keys_lo = self.pair_left_offsets[symbol]
                left.keys_hi = self.pair_left_offsets[symbol + 1]
                self.cell_left_symbols.push_back(left)
            if self.symbol_is_right_child[symbol]:
                right.symbol = symbol
                right.left_mask = self.symbol_right_mask[symbol]
                right.wide_offset = self.symbol_wide_offset[symbol]
                right.list_lo = self.cell_groups_list[g]
                right.list_n = self.cell_groups_size[g]
                self.cell_right_symbols.push_back(right)
        self.cell_left_n[c] = self.cell_left_symbols.size() - self.cell_left_lo[c]
        self.cell_right_n[c] = self.cell_right_symbols.size() - self.cell_right_lo[c]
        if self.cell_right_n[c] > 0:
            self._index_right_symbols(c)
            # its WideLists, not found yet
            self.cell_wide_lo[c] = self.wide_lists.size()
            self.wide_lists.resize(self.wide_lists.size() + WIDE_BITS, unfound)

    cdef void _index_right_symbols(self, int c) noexcept nogil:
        """Cell c's table of its CellRightSymbols by symbol (at most half full), for find_right_slot."""
        cdef int n = self.cell_right_n[c], first = self.cell_right_lo[c], t
        cdef int bits = 2
        cdef uint32_t slot, mask
        cdef RightSlot empty
        cdef RightSlot *table
        cdef int32_t symbol
        cdef uint64_t *filter
        cdef uint32_t bit
        empty.symbol = -1
        empty.index = -1
        empty.list_lo = 0
        empty.list_n = 0
        while (1 << bits) < 2 * n:
            bits += 1
        mask = (1u << bits) - 1
        self.cell_right_slots_lo[c] = self.right_slots.size()
        self.cell_right_bits[c] = bits
        self.right_slots.resize(self.right_slots.size() + (1 << bits), empty)
        table = self.right_slots.data() + self.cell_right_slots_lo[c]
        self.cell_right_filter_lo[c] = self.right_filters.size()
        self.right_filters.resize(self.right_filters.size() + RIGHT_FILTER_WORDS, 0)
        filter = self.right_filters.data() + self.cell_right_filter_lo[c]
        for t in range(first, first + n):
            symbol = self.cell_right_symbols[t].symbol
            slot = right_home_slot(symbol, bits)
            while table[slot].symbol >= 0:
                slot = (slot + 1) & mask
            table[slot].symbol = symbol
            table[slot].index = t
            table[slot].list_lo = self.cell_right_symbols[t].list_lo
            table[slot].list_n = self.cell_right_symbols[t].list_n
            bit = right_filter_bit(symbol)
            filter[bit >> 6] |= (<uint64_t>1) << (bit & 63)

    # ---- glue: GOAL over [0, j)

    cdef void _build_goal(self, int j) noexcept nogil:
        """GOAL over [0, j): glue start from cell (0, j), glue concatenation GOAL[0, k] + X[k, j]."""
        cdef int n1 = self.n + 1
        cdef int c = j, k, g, g_end, right_cell
        cdef int32_t symbol, first_item = self.items.size()
        cdef double value
        cdef vector[CkySortEntry] *kept = &self.kept_entries
        cdef size_t t
        self.groups.clear()
        g_end = self.cell_group_lo[c] + self.cell_group_n[c]
        for g in range(self.cell_group_lo[c], g_end):
            symbol = self.cell_groups_symbol[g]
            value = self.glue_start_value[symbol]
            if self.symbol_is_real[symbol] and not isnan(value):
                self._push_group(GROUP_GLUE_START, -1, 1, 0, self.cell_groups_list[g], self.cell_groups_size[g],
                                 0, 1, self.weight_glue * value)
        for k in range(1, j):
            if self.goal_list_n[k] == 0:
                continue
            right_cell = k * n1 + j
            g_end = self.cell_group_lo[right_cell] + self.cell_group_n[right_cell]
            for g in range(self.cell_group_lo[right_cell], g_end):
                symbol = self.cell_groups_symbol[g]
                value = self.glue_concat_value[symbol]
                if self.symbol_is_real[symbol] and not isnan(value):
                    self._push_group(GROUP_GLUE_CONCAT, -1, 1, 0, self.goal_list_lo[k], self.goal_list_n[k],
                                     self.cell_groups_list[g], self.cell_groups_size[g], self.weight_glue * value)
        self.recombine_map.clear_fitted()
        self._search(c, 0)
        self._prune_and_sort(first_item, self.items.size(), True, kept)
        self.goal_list_lo[j] = self.item_lists.size()
        for t in range(kept.size()):
            self.item_lists.push_back(kept[0][t].id)
        self.goal_list_n[j] = kept.size()


def cube_corner_key(int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank):
    """corner_key for tests."""
    return corner_key(g, rule_rank, left_rank, right_rank)


def item_order(symbols, scores):
    """The positions of (symbol, score) entries (ids: their positions) in CkyItemSorter's order, for tests:
    by symbol ascending, then score descending, then id ascending."""
    cdef const int32_t[::1] s = np.ascontiguousarray(symbols, dtype=np.int32)
    cdef const double[::1] v = np.ascontiguousarray(scores, dtype=np.float64)
    cdef vector[CkySortEntry] entries
    cdef CkyItemSorter sorter
    cdef CkySortEntry entry
    cdef Py_ssize_t k
    for k in range(s.shape[0]):
        entry.symbol = s[k]
        entry.score = v[k]
        entry.id = <int32_t>k
        entries.push_back(entry)
    sorter.sort(entries.data(), entries.size())
    return [entries[k].id for k in range(entries.size())]
