"""The compiled CKY chart: items, edges and ChartSearch, the search that fills it (see _chart.pyx)."""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._chart_boundaries cimport BoundaryWords
from decoder._ext._chart_cells cimport CellLeftSymbol, CellRightSymbol, RIGHT_FILTER_WORDS, RightSlot, WideList, WidePair
# the C++ helpers, the cubes and the grammar's records, cimported here for this module and for the searches
# built on ChartSearch (which cimport them from here)
from decoder._ext._chart_containers cimport (CKY_GLUE_CONCAT_HASH, CKY_GLUE_CONCAT_TARGET, CKY_GLUE_START_HASH,
                                             CKY_SEARCH_FAILED, CKY_SEARCH_NO_MEMORY, CKY_SEARCH_OK, CkyHashMap,
                                             CkyHeapEntry, CkyItemSorter, CkySortEntry, cky_append, cky_guarded,
                                             cky_heap_pop, cky_heap_push, cky_home_slot, cky_mix, cky_popcount64,
                                             cky_prefetch, cky_search_begin, cky_search_end, cky_sort_entries)
from decoder._ext._chart_grammar cimport PairKey, WIDE_BITS, WideRules
from decoder._ext._cube cimport GROUP_GLUE_CONCAT, GROUP_GLUE_START, GROUP_RULES, Group, Hypothesis, cky_round_stops
from decoder._ext._kenlm cimport KENLM_MAX_ORDER, ChartState, Model
from decoder._ext._lm cimport LanguageModel

# Edge kinds besides a grammar rule id (>= 0); cpdef: the module exposes them to Python, the one
# definition decoder/search reads too.
cpdef enum EdgeKind:
    EDGE_OOV = -1          # pass-through of the source word at tail0 (a position)
    EDGE_GLUE_START = -2   # GOAL -> X
    EDGE_GLUE_CONCAT = -3  # GOAL -> GOAL X

# [X, i, j, e]: symbol X over cell (i, j); e = n_states KenLM states from states[state_offset].
cdef struct Item:
    int32_t symbol
    int32_t cell
    int32_t state_offset
    int16_t n_states
    int8_t round          # unary round that built it (0: lexical/binary/OOV; GOAL items: 0)
    int8_t alive          # 0 when pruned or shadowed by a better duplicate
    double score          # best inside score (rule scores + weighted LM, with KenLM's estimates)
    int32_t best_edge
    int32_t first_edge    # incoming edges: a linked list through Edge.next_edge
    int32_t next_same_hash
    uint64_t hash


# A hyperedge: head <- rule(tail0, tail1); score is its own part (not the tails').
cdef struct Edge:
    int32_t head
    int32_t rule          # rule id, or EDGE_* above
    int32_t tail0         # item id, -1 for none; for EDGE_OOV the source position
    int32_t tail1
    double score
    float lm              # log10 LM score this edge adds (KenLM, with estimates)
    int32_t next_edge


cdef struct LmCacheEntry:
    float lm
    uint64_t state_hash
    ChartState state


cdef class ChartSearch:
    # ---- grammar (read-only arrays, prepared by decoder/search/grammar_arrays.py)
    cdef const int32_t[::1] rule_lhs
    cdef const uint8_t[::1] rule_carries
    cdef const int64_t[::1] rule_target_offsets
    cdef const int32_t[::1] rule_target_lm      # KenLM ids (>= 0) and block references (< 0)
    cdef const double[::1] rule_score           # weights . features + word-count weight * target words
    cdef const uint64_t[::1] rule_target_hash
    cdef const PairKey[::1] pair_right_keys     # [binary keys + 1]: right child and rules of each key
    cdef const int32_t[::1] pair_rules_sorted   # within a key, best rule first
    cdef const int64_t[::1] pair_left_offsets   # [n_symbols + 1]: keys with left child a
    # the wide left symbols (the <= 64 with the most keys, _chart.pair_key_index): their keys with rules
    # listed by right symbol, and per symbol the wide left symbols it is the right child of, so that a
    # wide left symbol finds its keys among a cell's right symbols by a bit test
    cdef const int64_t[::1] symbol_wide_offset  # [n_symbols + 1]: each symbol's keys with wide symbols in wide_rules
    cdef const WideRules[::1] wide_rules        # by right symbol, then wide bit
    cdef const int8_t[::1] symbol_wide_bit      # [n_symbols]: index among the wide left symbols, or -1
    cdef const uint64_t[::1] symbol_right_mask  # [n_symbols]: bit k: (wide symbol k, this) is a key with rules
    cdef const int64_t[:, ::1] single_range     # [all symbols, 2]: range in single_rules_sorted
    cdef const int32_t[::1] single_rules_sorted
    cdef const uint8_t[::1] symbol_is_real
    cdef const uint8_t[::1] symbol_is_right_child  # [n_symbols]: the right child of a key with rules
    cdef const double[::1] glue_start_value     # NaN: no such glue rule
    cdef const double[::1] glue_concat_value
    cdef const int32_t[::1] oov_symbols
    cdef int64_t n_symbols                      # store symbols (nonterminals + runs)
    cdef int32_t goal_symbol
    # GOAL -> X's LM target side, <s> then the child (KenLM's RuleScore BeginSentence, NonTerminal): a GOAL
    # item over [0, j) is scored in the sentence-start context, as Moses' glue rule <s> X; roots add </s>
    cdef int32_t glue_start_target[2]
    cdef int32_t eos_id
    cdef LanguageModel lm
    cdef const Model *model

    # ---- settings (from a decoder.settings.SearchSettings, through configure)
    cdef readonly double weight_lm, weight_oov, weight_glue, weight_word_count
    cdef readonly int max_span, max_unary_depth, pop_limit, unary_pop_limit, beam_size
    cdef readonly double beam_threshold
    cdef readonly bint exhaustive
    cdef readonly bint recombine_on_symbol      # two-pass first pass: items are (X, i, j, round), e^1 of the best
    # cube pruning's round also stops at this many items (0: no limit) or at a pop this far below the round's
    # best pop so far (cky_round_stops; 0: off): the two-pass first pass's first_pass_items and
    # first_pass_threshold (0 for cube pruning)
    cdef readonly long long round_item_limit
    cdef readonly double round_score_beam
    # keep each state's unminimized boundary words and count lm_state_minimized_recombinations (about 5%
    # more instructions in the search: off unless decode is asked to)
    cdef readonly bint count_minimized_recombinations
    cdef public size_t chart_limit              # items + edges a sentence's chart may hold (CHART_LIMIT)
    cdef bint chart_full                        # this sentence's chart reached it (or the budget): stop adding
    # the bytes one sentence's search may hold (settings.memory_budget_mb; 0: no limit), counted by _memory_bytes
    cdef readonly size_t memory_budget
    cdef readonly long long memory_budget_mb
    cdef bint over_budget                       # this sentence's search went over memory_budget: failed
    # pop_count = "real" (decoder.settings.ExperimentalSettings): pop_limit counts the pops that make real
    # items (complete rule applications, as Moses counts them); the binarization's virtual items are popped
    # from their own cube with virtual_pop_limit pops per cell (and unary round). Needs each key's rules with
    # real lhs first (grammar_arrays sorts them so under this setting).
    cdef readonly bint pop_count_real
    cdef readonly int virtual_pop_limit

    # ---- per sentence
    cdef int n
    cdef vector[int32_t] words_lm
    cdef vector[int32_t] run_at                 # cell -> run symbol matching the span exactly, or -1
    cdef vector[uint8_t] oov_at
    cdef vector[Item] items
    cdef vector[Edge] edges
    cdef vector[ChartState] states
    cdef vector[uint64_t] state_hashes          # chart_state_hash of each state
    cdef vector[BoundaryWords] state_boundaries # the unminimized boundary words of each state (when counted)
    cdef int boundary_length                    # order - 1: the words a boundary keeps at each end
    cdef vector[int32_t] item_lists             # [0] = -1: the placeholder list for runs and absent children
    cdef vector[int32_t] cell_group_lo          # per cell: its symbol groups in cell_groups
    cdef vector[int32_t] cell_group_n
    cdef vector[int32_t] cell_groups_symbol     # per symbol group: symbol, list offset, size
    cdef vector[int32_t] cell_groups_list
    cdef vector[int32_t] cell_groups_size
    cdef vector[int32_t] cell_left_lo           # per cell: its CellLeftSymbols in cell_left_symbols
    cdef vector[int32_t] cell_left_n
    cdef vector[CellLeftSymbol] cell_left_symbols
    cdef vector[int32_t] cell_right_lo          # per cell: its CellRightSymbols in cell_right_symbols
    cdef vector[int32_t] cell_right_n
    cdef vector[CellRightSymbol] cell_right_symbols
    # per cell with CellRightSymbols: a table of them by symbol, 2 ** cell_right_bits[c] RightSlots from
    # cell_right_slots_lo[c] in right_slots (at most half full), for the keys of a left symbol to look up
    cdef vector[int32_t] cell_right_slots_lo
    cdef vector[int8_t] cell_right_bits
    cdef vector[RightSlot] right_slots
    # per cell: its filter of right symbols, RIGHT_FILTER_WORDS words from cell_right_filter_lo[c] in
    # right_filters (0: the empty filter, for a cell with no right symbols)
    cdef vector[int32_t] cell_right_filter_lo
    cdef vector[uint64_t] right_filters
    # per cell with CellRightSymbols: its WIDE_BITS WideLists from cell_wide_lo[c] in wide_lists
    # (per wide bit, the keys of that wide left symbol among the cell's right symbols), found on first use
    cdef vector[int32_t] cell_wide_lo
    cdef vector[WideList] wide_lists
    cdef vector[WidePair] wide_pairs
    cdef vector[int32_t] goal_list_lo           # per j: GOAL items over [0, j) in item_lists
    cdef vector[int32_t] goal_list_n
    cdef vector[Group] groups
    cdef vector[CkyHeapEntry] heap               # cube pruning: (score, index into hypotheses)
    cdef vector[Hypothesis] hypotheses
    cdef vector[ChartState] pending_states
    cdef vector[uint64_t] pending_hashes
    cdef vector[BoundaryWords] pending_boundaries  # of the hypothesis being added (_hypothesis_boundaries)
    cdef CkyHashMap seen
    cdef CkyHashMap recombine_map               # item hash -> newest item with it (chain: next_same_hash)
    cdef CkyHashMap lm_cache_index
    cdef vector[LmCacheEntry] lm_cache
    cdef vector[const ChartState *] child_pointers
    cdef vector[uint64_t] child_hashes
    cdef vector[int32_t] scratch
    cdef vector[CkySortEntry] sort_entries      # _prune_and_sort: the cell's items by score, then the survivors
    cdef vector[CkySortEntry] kept_entries      # _finish_cell, _build_goal: the survivors (_prune_and_sort's kept)
    cdef vector[CkySortEntry] unary_entries     # _add_unary_groups: the previous round's items
    cdef CkyItemSorter item_sorter              # _prune_and_sort's and _add_unary_groups' sort of a cell's items
    cdef vector[uint64_t] sort_keys             # _prune_and_sort: (symbol, rank by score) of each survivor

    # ---- per-sentence counters
    cdef public unsigned long long edges_proposed, edges_kept, lm_queries, lm_queries_novel
    # hypotheses added to an existing item; with count_minimized_recombinations, those of them whose
    # unminimized boundary words differ from the item's (its first hypothesis's): the recombinations
    # that KenLM's state minimization allows
    cdef public unsigned long long recombinations, lm_state_minimized_recombinations
    cdef vector[int32_t] items_in_cell          # alive items after pruning, per cell

    # ---- the search (_chart.pyx, in the same sections)
    # a sentence
    cdef int _guarded(self, int step, int n) except -1
    cdef void _release_memory(self)
    cdef int _reset(self, int n) noexcept nogil
    cdef size_t _cell_table_bytes(self, size_t cells) noexcept nogil
    cdef size_t _memory_bytes(self) noexcept nogil
    # for tests
    cdef int _cell_index(self, int i, int j) except -1
    # the cells
    cdef int _build_cells(self) noexcept nogil
    cdef void _build_cell(self, int i, int j) noexcept nogil
    # items and edges: recombination
    cdef uint64_t _item_hash(self, int32_t symbol, const uint64_t *state_hashes, int n_states) noexcept nogil
    cdef bint _same_states(self, const Item *item, int32_t symbol, const ChartState *states, int n_states) noexcept nogil
    cdef int32_t _add_edge(self, int32_t head, int32_t rule, int32_t tail0, int32_t tail1, double score, float lm) noexcept nogil
    cdef void _add_hypothesis(self, int c, int round, Hypothesis *hyp) noexcept nogil
    cdef void _add_hypothesis_over(self, int c, int round, Hypothesis *hyp, int32_t tail0, int32_t tail1,
                                   double tails) noexcept nogil
    cdef size_t _hypothesis_boundaries(self, int c, const Hypothesis *hyp, int32_t tail0, int32_t tail1) noexcept nogil
    cdef void _add_oov_items(self, int i, int c) noexcept nogil
    # LM scoring, cached per sentence
    cdef float _score(self, const int32_t *target, Py_ssize_t length, uint64_t target_hash, ChartState *out, uint64_t *out_hash) noexcept nogil
    # a cell's cubes
    cdef void _push_group(self, int8_t kind, int64_t rules_lo, int32_t n_rules, int8_t single, int32_t left_lo, int32_t n_left, int32_t right_lo, int32_t n_right, double fixed_score) noexcept nogil
    cdef void _add_single_group(self, int32_t child, int32_t list_lo, int32_t list_n) noexcept nogil
    cdef int64_t _find_pair_key(self, int64_t lo, int64_t hi, int32_t right) noexcept nogil
    cdef int64_t _gallop(self, int64_t lo, int64_t hi, int32_t right) noexcept nogil
    cdef void _add_binary_groups(self, int left_cell, int right_cell) noexcept nogil
    cdef void _add_wide_groups(self, int64_t key_base, int8_t wide_bit, int32_t left_lo, int32_t left_n, int32_t right_run, int right_cell) noexcept nogil
    cdef void _find_wide_pairs(self, int64_t key_base, int8_t wide_bit, int right_cell) noexcept nogil
    cdef bint _add_unary_groups(self, int32_t first_item, int round) noexcept nogil
    # cube pruning (Chiang 2007)
    cdef void _evaluate(self, int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank, Hypothesis *hyp) noexcept nogil
    cdef void _push_corner(self, int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank) noexcept nogil
    cdef void _search(self, int c, int round) noexcept nogil
    cdef void _search_groups(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil
    cdef int32_t _split_groups_by_kind(self) noexcept nogil
    cdef void _cube(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil
    # finishing a cell
    cdef int32_t _prune_and_sort(self, int32_t first_item, int32_t end_item, bint goal, vector[CkySortEntry] *kept) noexcept nogil
    cdef void _finish_cell(self, int c, int32_t first_item) noexcept nogil
    cdef void _index_right_symbols(self, int c) noexcept nogil
    # glue
    cdef void _build_goal(self, int j) noexcept nogil
