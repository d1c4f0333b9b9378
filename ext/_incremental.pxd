# distutils: language = c++
"""Incremental search by boundary-word grouping over the compiled chart (see _incremental.pyx)."""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._chart cimport ChartSearch, CkyHashMap, CkyHeapEntry, CkySortEntry, Group, Hypothesis
from decoder._ext._kenlm cimport ChartState

cdef extern from "incremental_sort.hh":
    # the search's queue: a 4-ary max-heap of (score, index), children in one cache line
    cdef cppclass CkyQueue:
        CkyQueue() nogil
        size_t size() nogil
        void clear() nogil
        void reserve(size_t capacity) nogil
        void push_back(const CkyHeapEntry &entry) nogil  # unordered, then cky_queue_make
        CkyHeapEntry *append_room(size_t k) nogil  # room for k unordered entries in place, then set_size
        void set_size(size_t n) nogil
        const CkyHeapEntry &operator[](size_t i) nogil  # [0]: the best
    void cky_queue_make(CkyQueue &queue) nogil
    void cky_queue_push(CkyQueue &queue, double score, int32_t index) nogil
    CkyHeapEntry cky_queue_pop(CkyQueue &queue) nogil
    # the partial edges' LM cache: key -> score, per queue search
    cdef cppclass CkyScoreCache:
        CkyScoreCache() nogil
        size_t size() nogil
        void clear() nogil
        const float *find(uint64_t key) nogil
        bint set(uint64_t key, float value) nogil


cdef extern from "incremental_layout.hh":
    void *cky_huge_copy(const void *src, size_t n) nogil  # a copy in 2 MB pages (free it; NULL: no memory)
    # One node of a vertex's boundary-word trie; a node's children are contiguous, best first. 64 bytes,
    # aligned (one cache line): the item's fields a pop reads (n_states, state_offset) are copied in.
    cdef struct TrieNode:
        double score          # best descendant item's inside score
        int32_t first_child   # into IncrementalSearch.nodes
        int32_t n_children    # -1: a root not grown yet (first_child: its item list's offset)
        int32_t rank          # leaf: the item's position in its item list; inner node: -1
        int32_t item          # leaf: the item; inner node: its best descendant (whose words it reveals)
        int16_t n_states      # that item's n_states and state_offset (its states in ChartSearch.states)
        int32_t item_state_offset
        int16_t depth         # boundary tokens revealed (a leaf: its item's tokens + 1; a single item's root:
                              # SINGLE_ITEM_DEPTH, uncounted; the search reads it only for inner nodes)
        uint32_t reveals      # the (block, side) bits (_incremental.side_bit) of the tokens it reveals beyond its
                              # parent's that change its partial LM state (0: end tokens of a long block's sides,
                              # or the item itself: the LM estimate is the parent's)
        uint32_t below        # the same of every node below it (0: a leaf, or its items' states are equal)
        int32_t state_offset  # its partial states (one per block) in IncrementalSearch.node_states; -1: a
                              # leaf, whose states are its item's
        uint64_t state_key    # hash of its partial states (the partial LM cache's key with a rule's target)
        int32_t n_items       # items (leaves) below it
        int32_t flat_lo       # its leaves best first in IncrementalSearch.flat_leaves (made when first needed; -1)

    # A hyperedge with tails still being refined: tail t is children[first[t]:] of node[t]
    # (first 0: the whole node); node -1: no tail (a terminal run or an absent child). 64 bytes, aligned
    # (one cache line; it is copied a few times per pop).
    cdef struct PartialEdge:
        double score
        double fixed          # the rule's score (a glue group's fixed score)
        float lm              # the LM estimate in score (weight not applied)
        int32_t group
        int32_t rule_rank
        int32_t complete      # every tail an item: its LM state in IncrementalSearch.complete_states; else -1
        uint32_t relevant[2]  # per tail: the side bits (TrieNode.reveals) whose words can change the LM score
        int32_t node[2]
        int32_t first[2]
        int8_t flat[2]        # tail t is the items of node[t] (flat_leaves) from first[t] on, not its children
        int8_t initial        # tails still at their roots: popping it lets the group's next rule in
        int8_t scores_lm      # the rule (or glue concatenation) has an LM score
        int8_t estimated      # lm is the rule's words-only estimate (initial edges and their rest edges)


# Per position of the sorted rule arrays (a group's rules, in order): what a group's initial edges and their pops
# read. The one declaration of the layout: _incremental.SORTED_RULE_DTYPE is made from it, and
# decoder.search.incremental.sorted_rule_arrays writes the records in that dtype.
cdef struct SortedRule:
    double score          # the rule's score
    float estimate        # its words' LM estimate (log10, _chart.rule_lm_estimates; NaN: a carrying rule, no LM)
    int32_t rule          # the rule id
    int32_t target_first  # its LM target's first and last symbol (a child: -1 - its index) and length
    int32_t target_last
    int16_t target_length
    uint16_t junction_gap # the largest minus words-only estimate of a word right after a tail, in
                          # 1/JUNCTION_GAP_UNITS log10 (decoder.search.incremental.junction_gaps)
    int32_t lhs
    int64_t target_lo     # its LM target in the chart's rule_target_lm
    uint64_t target_hash  # and the target's hash (rule_target_hash)


# Per group of the cell being searched: its tails' root scores (summed) and the rule rank of its queued
# initial edge (a bare queue entry, index ~group, until popped).
cdef struct GroupCursor:
    double tails
    int32_t rank


# Blocks whose side keys (_append_tokens) are kept in IncrementalSearch.side_keys.
cdef enum:
    SIDE_KEY_BLOCKS = 16


cdef class IncrementalSearch(ChartSearch):
    cdef vector[TrieNode] nodes
    cdef vector[int32_t] trie_of_list          # item-list offset -> trie root, or -1 (per sentence)
    cdef vector[PartialEdge] partial_edges      # the queued partial edges (queue entry index >= 0), per queue search
    cdef vector[int32_t] free_edges             # slots of partial_edges whose edge was popped (reused first)
    cdef vector[int32_t] flat_leaves            # per sentence: flattened nodes' leaves, best first
    cdef vector[GroupCursor] group_cursor
    cdef vector[double] list_score             # per item-list position: its item's score (0: -1), per sentence
    cdef CkyQueue queue
    cdef vector[int32_t] ranks_scratch
    cdef vector[uint64_t] tokens_scratch
    cdef vector[uint64_t] trie_tokens          # the trie being built: its items' boundary tokens (by rank,
    cdef vector[uint32_t] trie_token_sides     # from trie_token_lo[rank]: value and side, _append_tokens) and
    cdef vector[uint32_t] trie_token_bits      # their side bits
    cdef vector[int32_t] trie_token_lo
    cdef uint64_t side_keys[4 * SIDE_KEY_BLOCKS]  # cky_mix(0x7A11, 4 * block + side): a token's side key
    cdef vector[CkySortEntry] child_order      # _build_node's stack of children (sorted best first)
    cdef vector[int32_t] child_bounds          # and their [start, end) in ranks_scratch
    cdef vector[ChartState] node_states        # the trie nodes' partial states (per sentence)
    cdef vector[unsigned char] node_cuts       # and per partial state what it leaves out (_lm.score_partial_target's cut)
    cdef vector[unsigned char] child_cuts      # _partial_lm's cut per child block
    cdef CkyScoreCache partial_lm              # LM cache of partial edges, per cell and round: key -> its LM score
    # Per position of pair_rules_sorted, then of single_rules_sorted from single_offset on: SortedRule
    cdef object sorted_rules_array
    cdef const SortedRule *sorted_rules
    cdef void *sorted_rules_huge               # sorted_rules when copied into 2 MB pages (freed with the search)
    cdef int64_t single_offset
    cdef vector[ChartState] complete_states    # per cell (round): the states of complete partial edges
    cdef int32_t n_complete                    # (complete_states[:n_complete] are this cell's)
    # use what a rule's LM score cannot see (edge.relevant): refinements that keep the LM score, flat tails;
    # off: every side counts as seen (the same search, more LM scoring and pops: for tests)
    cdef readonly bint lm_visibility
    # an initial edge of a rule whose SortedRule.junction_gap is above this (log10) is queued at its exact
    # corner, the others at their words-only estimate
    cdef readonly double junction_threshold
    # a tail whose node has at most this many items (0: none) is split last and then enumerated item by item,
    # best first (flat), even when its items' words change the LM score: no partial LM scoring and no trie
    # descent inside small subtrees; an edge over one of its items is scored when complete (exactly) or when
    # its other tail is split (the search stays exhaustive with no pop limit). Such a list's trie is shallow:
    # its root (the full trie's, the same partial states) over its items as leaves, best first.
    cdef readonly int flat_items
    cdef readonly bint check_corner_keys       # (tests) each corner key against _evaluated_corner's ...
    cdef readonly unsigned long long corner_key_mismatches  # ... and the keys that differ
    cdef double _corner_key(self, int32_t g, int32_t rule_rank) noexcept nogil
    cdef bint _keyed_at_corner(self, const SortedRule *sorted_rule) noexcept nogil
    # diagnosis: one row per _queue_search call, TRACE_FIELDS values each (search_trace)
    cdef readonly bint trace
    cdef vector[double] trace_rows
    cdef readonly unsigned long long partial_pops, partial_pushes, partial_lm_novel, initial_edges, complete_scored
    cdef readonly unsigned long long flat_tails
    cdef readonly unsigned long long corner_keys  # initial edges queued at their exact corner (junction_threshold)

    cdef int32_t _trie(self, int32_t list_lo, int32_t list_n) noexcept nogil
    cdef void _set_item(self, int32_t slot, int32_t item) noexcept nogil
    cdef int32_t _new_trie(self, int32_t list_lo, int32_t list_n) noexcept nogil
    cdef void _grow_trie(self, int32_t root, int32_t list_lo, int32_t list_n) noexcept nogil
    cdef void _build_shallow(self, int32_t root, int32_t list_lo, int32_t list_n) noexcept nogil
    cdef void _build_node(self, int32_t slot, int32_t list_lo, int32_t lo, int32_t hi, int depth,
                          int parent_depth) noexcept nogil
    cdef size_t _memory_bytes(self) noexcept nogil
    cdef int _append_tokens(self, int32_t item, size_t base) noexcept nogil
    cdef int _shared_depth(self, int32_t lo, int32_t hi, int depth) noexcept nogil
    cdef void _push_leaf(self, int32_t item, int32_t rank, int depth, uint32_t reveals) noexcept nogil
    cdef uint64_t _token_key(self, size_t position) noexcept nogil
    cdef unsigned char _partial_state(self, int32_t item, int depth, int block, ChartState *out) noexcept nogil
    cdef void _set_node_states(self, int32_t slot) noexcept nogil
    cdef float _partial_lm(self, uint64_t key, const int32_t *target, Py_ssize_t length, unsigned long long calls,
                           const PartialEdge *edge) noexcept nogil
    cdef void _flatten(self, int32_t node) noexcept nogil
    cdef double _tail_score(self, int32_t node, int32_t first, bint flat) noexcept nogil
    cdef void _score_partial(self, PartialEdge *edge) noexcept nogil
    cdef const SortedRule *_sorted_rule(self, const Group *group, int64_t rule_rank) noexcept nogil
    cdef void _set_rule(self, PartialEdge *edge) noexcept nogil
    cdef int32_t _store_edge(self, const PartialEdge *edge) noexcept nogil
    cdef void _queue_initial(self, int32_t g, int32_t rule_rank) noexcept nogil
    cdef void _initial_edge(self, int32_t g, PartialEdge *edge) noexcept nogil
    cdef float _score_complete(self, const int32_t *target, Py_ssize_t length, unsigned long long calls,
                               ChartState *out) noexcept nogil
    cdef void _complete_hypothesis(self, const PartialEdge *edge, Hypothesis *hyp) noexcept nogil
    cdef const int32_t *_rule_target(self, const SortedRule *sorted_rule, int32_t *inline_target) noexcept nogil
    cdef unsigned long long _rule_target_calls(self, const SortedRule *sorted_rule) noexcept nogil
    cdef void _add_complete_hypothesis(self, int c, int round, const PartialEdge *edge, Hypothesis *hyp) noexcept nogil
    cdef bint _take_pop(self, int c, int round, const PartialEdge *edge, Hypothesis *hyp, int *pops,
                        double *lowest_pop) noexcept nogil
    cdef bint _request_ahead(self, int32_t *ahead_index) noexcept nogil
    cdef double _evaluated_corner(self, int32_t g, int32_t rule_rank) noexcept nogil
    cdef void _queue_search(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil
