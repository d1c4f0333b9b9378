"""The compiled CKY chart: items, edges, cube-pruning hypotheses (see _chart.pyx)."""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._kenlm cimport KENLM_MAX_ORDER, ChartState, Model
from decoder._ext._lm cimport LanguageModel

cdef extern from "chart_containers.hh":
    const int32_t CKY_GLUE_CONCAT_TARGET[2]
    const uint64_t CKY_GLUE_CONCAT_HASH
    const uint64_t CKY_GLUE_START_HASH
    cdef struct CkySortEntry:
        double score
        int32_t symbol
        int32_t id
    void cky_sort_entries(CkySortEntry *first, size_t n) nogil
    cdef cppclass CkyItemSorter:  # cky_sort_entries' order, for a cell's items (nearly in order already)
        CkyItemSorter() nogil
        void sort(CkySortEntry *first, size_t n) nogil
    cdef struct CkyHeapEntry:
        double score
        int32_t index
    void cky_heap_push(vector[CkyHeapEntry] &heap, double score, int32_t index) nogil
    int32_t cky_heap_pop(vector[CkyHeapEntry] &heap) nogil
    cdef cppclass CkyHashMap:
        CkyHashMap() nogil
        void clear() nogil
        void clear_fitted() nogil  # clear, the table sized for as many keys as it held
        size_t size() nogil
        int32_t *find(uint64_t key) nogil
        bint set(uint64_t key, int32_t value) nogil
        size_t bytes() nogil  # the table's memory
    uint64_t cky_mix(uint64_t h, uint64_t x) nogil
    T *cky_append[T](vector[T] &v) nogil
    size_t cky_home_slot(uint64_t key) nogil
    int cky_popcount64(uint64_t x) nogil

# A search's nogil part run so that a C++ exception (std::bad_alloc) inside it is its result, not an ignored
# exception (search_errors.hh): cky_search_begin(), cky_guarded(self._step()), cky_search_end().
cdef extern from "search_errors.hh":
    enum:
        CKY_SEARCH_OK
        CKY_SEARCH_NO_MEMORY
        CKY_SEARCH_FAILED
    void cky_search_begin()
    void cky_search_end()
    int cky_guarded "CKY_GUARDED"(int step) nogil

cdef extern from "prefetch.hh":
    void cky_prefetch(const void *address) nogil


# Edge kinds besides a grammar rule id (>= 0); cpdef: the module exposes them to Python, the one
# definition decoder/search reads too.
cpdef enum EdgeKind:
    EDGE_OOV = -1          # pass-through of the source word at tail0 (a position)
    EDGE_GLUE_START = -2   # GOAL -> X
    EDGE_GLUE_CONCAT = -3  # GOAL -> GOAL X

# Group kinds: what the first dimension of a cube enumerates.
cdef enum:
    GROUP_RULES = 0        # grammar rules (sorted best first)
    GROUP_GLUE_START = 1
    GROUP_GLUE_CONCAT = 2


# The round's score beam of the two-pass search's first pass (cube pruning's _cube; the experimental setting
# first_pass_threshold, the paper's beta): a cell's search (one unary round) stops at a complete pop scoring
# more than `threshold` below the best complete pop so far, before that pop is added (0: off). Never at the
# first pop (pops == 0). best: the best so far, updated here.
cdef inline bint cky_round_stops(double score, int pops, double *best, double threshold) noexcept nogil:
    if pops == 0 or score > best[0]:
        best[0] = score
        return False
    return threshold > 0 and score < best[0] - threshold


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


# A binary rule key as the search reads it (pair_right_keys in _chart.pyx), sorted by (left, right) as
# pair_keys; the left child is implied by the range (pair_left_offsets) and a last entry closes the
# rules of the last key.
cdef struct PairKey:
    int32_t right
    int32_t rules_lo      # pair_rules_sorted[rules_lo : the next entry's rules_lo]: the key's rules


# The rules of one key (wide left symbol, right symbol) in ChartSearch.wide_rules (pair_key_index in _chart.pyx).
cdef struct WideRules:
    int32_t rules_lo      # pair_rules_sorted[rules_lo : rules_lo + n_rules]
    int32_t n_rules


# A cell's symbols as binary rules read them, listed once when the cell is finished (ascending symbol):
# those that are the left child of some key, with their range of keys ...
cdef struct CellLeftSymbol:
    int64_t keys_lo       # pair_right_keys[keys_lo:keys_hi]: the keys with this left child
    int64_t keys_hi
    int32_t symbol
    int32_t list_lo       # into item_lists (its symbol group's, cell_groups_*)
    int32_t list_n
    int8_t wide_bit       # symbol_wide_bit


# ... and those that are the right child of some key with rules, with their item list.
cdef struct CellRightSymbol:
    uint64_t left_mask    # symbol_right_mask
    int64_t wide_offset   # symbol_wide_offset: its keys with the wide left symbols in wide_rules
    int32_t symbol
    int32_t list_lo       # into item_lists
    int32_t list_n


# One slot of a cell's table of its CellRightSymbols by symbol (ChartSearch.right_slots; open addressing,
# linear probing from right_home_slot): symbol -1 is an empty slot; index: into cell_right_symbols; the
# symbol's item list (the CellRightSymbol's) beside it, so that a key found reads one slot (16 bytes).
cdef struct RightSlot:
    int32_t symbol
    int32_t index
    int32_t list_lo
    int32_t list_n


# The bits of a cell's filter of its right symbols (ChartSearch.right_filters): bit right_filter_bit(symbol)
# is set for each of its CellRightSymbols, so that most keys whose right child is not there are rejected by
# one bit (one cache line per cell) before its table is probed.
cdef enum:
    RIGHT_FILTER_WORDS = 8    # 512 bits


# The keys of one wide left symbol among one cell's CellRightSymbols (ChartSearch.wide_pairs): the key's rules
# (a range of pair_rules_sorted) and the right symbol's item list. Found the first time the wide left symbol
# meets the cell as a right child, read every later time.
cdef struct WidePair:
    int32_t rules_lo
    int32_t n_rules
    int32_t list_lo       # into item_lists
    int32_t list_n


# The most wide left symbols (the bits of a left mask; _chart.MAX_WIDE_LEFT_SYMBOLS).
cdef enum:
    WIDE_BITS = 64


# Where the WidePairs of one (cell, wide bit) are: wide_pairs[lo:lo + n]; lo -1: not found yet.
cdef struct WideList:
    int32_t lo
    int32_t n


# A cube: rules x left items x right items (a run or absent child is a list of one -1).
cdef struct Group:
    int8_t kind
    int32_t symbol        # lhs for GROUP_RULES is per rule; GOAL for glue
    int64_t rules_lo      # into the sorted rule array (pair or single), or -1 for glue
    int32_t n_rules
    int8_t single         # rules come from the single-child (unary/lexical) array
    int32_t left_lo       # into item_lists
    int32_t n_left
    int32_t right_lo
    int32_t n_right
    double fixed_score    # glue: weight * glue value


cdef struct Hypothesis:
    double score
    float lm
    int32_t group
    int32_t rule_rank
    int32_t left_rank
    int32_t right_rank
    int32_t state_offset  # into pending_states
    int16_t n_states
    int32_t lhs
    int32_t rule


# The unminimized LM boundary of a state's target yield: its first and its last min(length, order - 1)
# words (KenLM ids; first: left to right, last: left to right). Items whose ChartStates are equal
# but whose boundaries differ recombine only because KenLM minimized their states.
cdef struct BoundaryWords:
    int32_t first[KENLM_MAX_ORDER - 1]
    int32_t last[KENLM_MAX_ORDER - 1]
    int8_t n


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

    # ---- the chart (see _chart.pyx)
    cdef int _reset(self, int n) noexcept nogil
    cdef int _guarded(self, int step, int n) except -1
    cdef void _release_memory(self)
    cdef int _build_cells(self) noexcept nogil
    cdef size_t _cell_table_bytes(self, size_t cells) noexcept nogil
    cdef size_t _memory_bytes(self) noexcept nogil
    cdef int _cell_index(self, int i, int j) except -1
    cdef void _build_cell(self, int i, int j) noexcept nogil
    cdef uint64_t _item_hash(self, int32_t symbol, const uint64_t *state_hashes, int n_states) noexcept nogil
    cdef bint _same_states(self, const Item *item, int32_t symbol, const ChartState *states, int n_states) noexcept nogil
    cdef int32_t _add_edge(self, int32_t head, int32_t rule, int32_t tail0, int32_t tail1, double score, float lm) noexcept nogil
    cdef void _add_hypothesis(self, int c, int round, Hypothesis *hyp) noexcept nogil
    cdef void _add_hypothesis_over(self, int c, int round, Hypothesis *hyp, int32_t tail0, int32_t tail1,
                                   double tails) noexcept nogil
    cdef size_t _hypothesis_boundaries(self, int c, const Hypothesis *hyp, int32_t tail0, int32_t tail1) noexcept nogil
    cdef void _concatenate_boundaries(self, const int32_t *target, Py_ssize_t length, const BoundaryWords *children, BoundaryWords *out) noexcept nogil
    cdef void _add_oov_items(self, int i, int c) noexcept nogil
    cdef float _score(self, const int32_t *target, Py_ssize_t length, uint64_t target_hash, ChartState *out, uint64_t *out_hash) noexcept nogil
    cdef void _push_group(self, int8_t kind, int64_t rules_lo, int32_t n_rules, int8_t single, int32_t left_lo, int32_t n_left, int32_t right_lo, int32_t n_right, double fixed_score) noexcept nogil
    cdef void _add_single_group(self, int32_t child, int32_t list_lo, int32_t list_n) noexcept nogil
    cdef int64_t _find_pair_key(self, int64_t lo, int64_t hi, int32_t right) noexcept nogil
    cdef int64_t _gallop(self, int64_t lo, int64_t hi, int32_t right) noexcept nogil
    cdef void _add_wide_groups(self, int64_t key_base, int8_t wide_bit, int32_t left_lo, int32_t left_n, int32_t right_run, int right_cell) noexcept nogil
    cdef void _find_wide_pairs(self, int64_t key_base, int8_t wide_bit, int right_cell) noexcept nogil
    cdef void _add_binary_groups(self, int left_cell, int right_cell) noexcept nogil
    cdef bint _add_unary_groups(self, int32_t first_item, int round) noexcept nogil
    cdef void _evaluate(self, int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank, Hypothesis *hyp) noexcept nogil
    cdef void _push_corner(self, int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank) noexcept nogil
    cdef void _search(self, int c, int round) noexcept nogil
    cdef void _search_groups(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil
    cdef void _cube(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil
    cdef int32_t _split_groups_by_kind(self) noexcept nogil
    cdef int32_t _prune_and_sort(self, int32_t first_item, int32_t end_item, bint goal, vector[CkySortEntry] *kept) noexcept nogil
    cdef void _finish_cell(self, int c, int32_t first_item) noexcept nogil
    cdef void _index_right_symbols(self, int c) noexcept nogil
    cdef void _build_goal(self, int j) noexcept nogil
