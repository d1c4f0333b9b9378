# distutils: language = c++
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Incremental search by boundary-word grouping, compiled.

The algorithm of Heafield, Koehn and Lavie (2013), "Grouping language model
boundary words to speed k-best extraction from hypergraphs" (NAACL), on the
chart of decoder._ext._chart (same items, edges, recombination, LM scoring and
cache, counters, export; only the search inside a cell differs). The pure-Python
reference is decoder/search/incremental_reference.py; with no pop limit every
hypothesis is completed and the chart equals exhaustive search.

Vertices and tries. A vertex is the sorted item list of one nonterminal in one
cell. Its items are grouped in a trie by their KenLM boundary words: per carried
block, the left state's words outermost first alternating with the right
state's words, most recent first, each side closed by an end token (a block
whose left state is not full has all its words on the left). A node's score is
its best descendant item's inside score. The trie is path-compressed (a node
reveals every token its items share; a single item is a leaf) and grown only
when an edge over its root is first popped; tries and their nodes' partial
states are made once per item list and sentence, and shared by every parent
cell. A list of at most `flat_items` items gets a shallow trie: its root over
its items as leaves, best first.

Partial edges. A partial edge is a cube-pruning hypothesis whose tails are trie
nodes (or a node's remaining children). Its score is the rule score, the tails'
scores and the LM estimate of the rule's words with each tail's state cut to
the boundary words revealed so far (_lm.score_partial_target: the words after a
tail's unrevealed words are scored as of unknown left context, with the lower-
order rest costs of a rest_probing LM), cached per cell and unary round by
(target, tail nodes' state hashes). An edge with its tails at their roots takes
the rule's words-only estimate instead (_chart.rule_lm_estimates, no query), and
is scored exactly when first popped. An edge whose tails are all items is scored
exactly, straight from KenLM. What the initial edges and their pops read of a
rule is one SortedRule record per position of the sorted rule arrays (score,
estimate, id, lhs, the LM target's first and last symbol, length, offset and
hash; SORTED_RULE_DTYPE is its numpy view).

The queue. One priority queue (a 4-ary heap) per cell and unary round, as in
Moses' incremental search: a popped partial edge whose tails are all items
becomes a hypothesis and is recombined, counting one pop against `pop_limit`;
otherwise the tail with the fewest revealed words (the most general context) is
split into its best child and its remaining children, both re-queued (the best
child, when still the queue's best, is popped next without the queue). With the
experimental pop_count = "real" the virtual (binarization) groups get a queue of
their own first, with virtual_pop_limit pops, then the real ones with pop_limit
(ChartSearch._search, through _search_groups). Unlike the paper, which queues
every edge at once, a group's rules (sorted best first) enter one at a time:
popping rule r's unrefined edge queues rule r + 1's, as cube pruning's rule
dimension does.

What a rule's LM score cannot see. KenLM's RuleScore copies the state of a block
that begins the target and only keeps the right state of one that ends it, so a
block's left words at the start of the target, and its right words at its end,
change no LM score of this rule (rule_relevant_sides). A refinement that reveals
only such words keeps the edge's LM score, and a tail whose node has nothing the
rule can see left below it is "flat": its items are enumerated best first
instead of walking down the trie. Neither changes the search. A tail whose node
has at most `flat_items` items is flat too, even where its items' words change
the LM score: another search order (the same exhaustive search), with fewer
partial pops and LM scorings.

Initial edges' keys. The paper keys an edge whose tails reveal no words by the
rule's words-only estimate. Where a rule has a word right after a tail whose
words-only estimate is far below what the tail's words let it score (a rare
word well predicted by its context: SortedRule.junction_gap above
`junction_threshold` log10), that key hides a good edge until late; such a rule's
initial edges are queued at their exact corner score over the tails' best items
(cube pruning's corner), the others at their words-only estimate. Only the key
changes: a popped initial edge is split from its words-only estimate.
"""
cimport cython
import numpy as np

from libc.math cimport INFINITY, isnan
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free
from libcpp.vector cimport vector

from decoder._ext._chart cimport (ChartSearch, CkyHeapEntry, CkySortEntry, Group, Hypothesis, Item, EDGE_GLUE_CONCAT,
                                  CKY_GLUE_CONCAT_HASH, CKY_GLUE_CONCAT_TARGET, CKY_GLUE_START_HASH,
                                  EDGE_GLUE_START,
                                  cky_mix, cky_prefetch, cky_sort_entries,
                                  GROUP_RULES, GROUP_GLUE_START, GROUP_GLUE_CONCAT)
from decoder._ext._kenlm cimport KENLM_MAX_ORDER, ChartState
from decoder._ext._lm cimport (LanguageModel, chart_state_hash, cut_chart_state, empty_chart_state,
                               score_partial_target, score_target)

cdef extern from "incremental_sort.hh":
    void cky_stable_sort_by_key(uint64_t *keys, int32_t *ids, size_t n) nogil

# End tokens of a block's sides.
cdef uint64_t END_SHORT = 0x51A7E5E0D0000001ULL
cdef uint64_t END_LONG = 0x51A7E5E0D0000002ULL
cdef uint64_t END_RIGHT = 0x51A7E5E0D0000003ULL
# GOAL -> GOAL X's target side: the two blocks in order (as ChartSearch scores it).
cdef uint64_t ABSENT_TAIL_KEY = 0x3C6EF372FE94F82BULL
# At most this many partial-edge LM scores are cached per cell and round (a 16-byte slot each: key, score, stamp).
cdef size_t PARTIAL_LM_ENTRIES = 1 << 21
# The group loop of a cell's initial edges prefetches what the group this many on reads.
cdef enum:
    PREFETCH_GROUPS = 16
    HUGE_COPY_BYTES = 4 << 20  # SortedRule records from this size on: copied into 2 MB pages
    GROW_AHEAD = 8             # _grow_trie requests the item this many on (and its state from half as far on)
    SINGLE_ITEM_DEPTH = 0x7FFF  # TrieNode.depth of a single item's root: all its tokens, not counted
    JUNCTION_GAP_UNITS_C = 100  # SortedRule.junction_gap counts 1/this log10
JUNCTION_GAP_UNITS = JUNCTION_GAP_UNITS_C  # (for decoder.search.incremental, which makes the records)
# A tail whose node has at most this many items is enumerated item by item (IncrementalSearch's flat_items).
FLAT_ITEMS = 16
# A rule whose junction gap (SortedRule.junction_gap) is above this many log10 has its initial edges queued at
# their exact corner (IncrementalSearch's junction_threshold).
JUNCTION_THRESHOLD = 2.0


# The numpy dtype of SortedRule, from the struct itself (its field names, types and offsets, as Cython's
# buffer format gives them): the one layout decoder.search.incremental writes the records in.
cdef SortedRule _sorted_rule_example
SORTED_RULE_DTYPE = np.asarray(<SortedRule[:1]>&_sorted_rule_example).dtype


def sorted_rule_offsets():
    """{field: byte offset} of SortedRule as the C compiler lays it out (for tests of SORTED_RULE_DTYPE)."""
    cdef SortedRule *record = &_sorted_rule_example
    cdef size_t base = <size_t>record
    return {"score": <size_t>&record.score - base, "estimate": <size_t>&record.estimate - base,
            "rule": <size_t>&record.rule - base, "target_first": <size_t>&record.target_first - base,
            "target_last": <size_t>&record.target_last - base, "target_length": <size_t>&record.target_length - base,
            "junction_gap": <size_t>&record.junction_gap - base, "lhs": <size_t>&record.lhs - base,
            "target_lo": <size_t>&record.target_lo - base, "target_hash": <size_t>&record.target_hash - base,
            "size": sizeof(SortedRule)}


def read_sorted_rules(records):
    """The records (SORTED_RULE_DTYPE) as the search reads them, through a SortedRule pointer: a tuple of the
    fields per record, in declaration order (for tests)."""
    records = np.ascontiguousarray(records)
    if records.dtype != SORTED_RULE_DTYPE:
        raise ValueError(f"records of {records.dtype}, not {SORTED_RULE_DTYPE}")
    cdef const unsigned char[::1] packed = records.view(np.uint8).reshape(-1)
    cdef const SortedRule *record
    out = []
    for k in range(records.shape[0]):
        record = <const SortedRule *>&packed[k * sizeof(SortedRule)]
        out.append((record.score, record.estimate, record.rule, record.target_first, record.target_last,
                    record.target_length, record.junction_gap, record.lhs, record.target_lo, record.target_hash))
    return out
cdef int SIDE_LEFT = 0
cdef int SIDE_RIGHT = 1
cdef int SIDE_SHORT = 2  # a block whose left state is not full: its words, all on the left


cdef inline uint32_t side_bit(int block, int side) noexcept nogil:
    """The bit of (block, side) in a node's reveal masks (blocks past the 10th share bit 31)."""
    return (<uint32_t>1) << (3 * block + side if block < 10 else 31)


cdef uint32_t rule_relevant_sides(int32_t first, int32_t last, Py_ssize_t length, int n_left_blocks,
                                  int tail) noexcept nogil:
    """The side bits of tail `tail`'s blocks whose words can change the LM score of a target of `length`
    symbols that begins with `first` and ends with `last` (children -1 - index: tail 0's n_left_blocks
    blocks, then tail 1's). A long block's left words change nothing when it begins the target
    (KenLM's RuleScore copies its state), its right words nothing when it ends it; a short block's
    words change nothing only when it is the whole target."""
    cdef uint32_t relevant = 0xFFFFFFFFu
    cdef int32_t child, block
    if length <= 0:
        return 0
    if first < 0:
        child = -first - 1
        block = child - n_left_blocks if tail == 1 else child
        if (child >= n_left_blocks) == (tail == 1) and block < 10:
            relevant &= ~side_bit(block, SIDE_LEFT)
            if length == 1:
                relevant &= ~side_bit(block, SIDE_SHORT)
    if last < 0:
        child = -last - 1
        block = child - n_left_blocks if tail == 1 else child
        if (child >= n_left_blocks) == (tail == 1) and block < 10:
            relevant &= ~side_bit(block, SIDE_RIGHT)
    return relevant


def queue_pops(batch, operations):
    """The search queue (incremental_sort.hh's 4-ary heap), for tests: entries `batch` (scores) ordered at once,
    then `operations` in turn (a score: push it; NaN: pop), then pops until empty. Returns the popped scores and
    indexes (an entry's index: its position in batch, then in operations)."""
    cdef CkyQueue queue
    cdef CkyHeapEntry entry
    cdef int32_t index = 0
    popped = []
    for score in batch:
        entry.score = score
        entry.index = index
        queue.push_back(entry)
        index += 1
    cky_queue_make(queue)
    for score in operations:
        if score != score:
            if queue.size() > 0:
                entry = cky_queue_pop(queue)
                popped.append((entry.score, entry.index))
        else:
            cky_queue_push(queue, score, index)
        index += 1
    while queue.size() > 0:
        entry = cky_queue_pop(queue)
        popped.append((entry.score, entry.index))
    return popped


def huge_copy(const unsigned char[::1] data):
    """cky_huge_copy (incremental_layout.hh), for tests: the bytes of its copy of `data` and whether the copy
    starts a 2 MB page (None: no copy made, for empty data)."""
    cdef void *block = cky_huge_copy(&data[0] if data.shape[0] > 0 else NULL, data.shape[0])
    if block == NULL:
        return None
    try:
        return (<const char *>block)[:data.shape[0]], (<size_t>block) % (<size_t>2 << 20) == 0
    finally:
        free(block)


def score_cache_run(operations):
    """The partial edges' LM cache (incremental_sort.hh's CkyScoreCache), for tests: `operations` in turn, each
    ("insert", key, value), ("find", key) or ("clear",); returns, per find, the value found or None, and per
    clear the entries it held before."""
    cdef CkyScoreCache cache
    cdef const float *found
    out = []
    for operation in operations:
        if operation[0] == "insert":
            cache.set(<uint64_t>operation[1], <float>operation[2])
        elif operation[0] == "find":
            found = cache.find(<uint64_t>operation[1])
            out.append(None if found == NULL else found[0])
        else:
            out.append(cache.size())
            cache.clear()
    return out


TRACE_FIELDS = ("cell", "round", "limit", "pops", "items_made", "partial_pops", "lowest_pop", "stop_key", "groups")


@cython.final  # (its methods are called directly, and inlined)
cdef class IncrementalSearch(ChartSearch):
    """ChartSearch with incremental search (boundary-word grouping) instead of cube pruning."""

    def __init__(self, dict arrays, LanguageModel lm, int64_t n_symbols, int32_t goal_symbol, settings, *,
                 int flat_items=FLAT_ITEMS, double junction_threshold=JUNCTION_THRESHOLD, bint lm_visibility=True,
                 bint trace=False, bint check_corner_keys=False, **weights):
        """As ChartSearch; arrays also holds, per position of pair_rules_sorted then of single_rules_sorted
        (from sorted_rules_single_offset on), the rule's SortedRule record (SORTED_RULE_DTYPE): sorted_rules
        (decoder.search.incremental.sorted_rule_arrays). The keywords change how the search runs, for tests and
        diagnosis (the defaults are the search): flat_items and junction_threshold (see the module docstring),
        lm_visibility (off: every word counts as seen by a rule's LM score, the same search with more LM
        scoring), trace (search_trace), check_corner_keys (each corner key against cube pruning's score)."""
        ChartSearch.__init__(self, arrays, lm, n_symbols, goal_symbol, settings, **weights)
        if flat_items < 0:
            raise ValueError(f"flat_items must be at least 0, not {flat_items}")
        self.lm_visibility = lm_visibility
        self.trace = trace
        self.flat_items = flat_items
        self.junction_threshold = junction_threshold
        self.check_corner_keys = check_corner_keys
        self.corner_key_mismatches = 0
        cdef int k
        for k in range(4 * SIDE_KEY_BLOCKS):
            self.side_keys[k] = cky_mix(<uint64_t>0x7A11, <uint64_t>k)
        cdef const unsigned char[::1] packed
        self.sorted_rules_array = np.ascontiguousarray(arrays["sorted_rules"])
        if self.sorted_rules_array.dtype != SORTED_RULE_DTYPE:
            raise ValueError(f"sorted_rules: records of {self.sorted_rules_array.dtype}, not SortedRule's "
                             f"{SORTED_RULE_DTYPE}")
        self.single_offset = arrays["sorted_rules_single_offset"]
        packed = self.sorted_rules_array.view(np.uint8).reshape(-1)
        self.sorted_rules = <const SortedRule *>&packed[0] if packed.shape[0] > 0 else NULL
        if packed.shape[0] >= HUGE_COPY_BYTES:
            self.sorted_rules_huge = cky_huge_copy(&packed[0], packed.shape[0])
            if self.sorted_rules_huge != NULL:
                self.sorted_rules = <const SortedRule *>self.sorted_rules_huge
                self.sorted_rules_array = None

    def __dealloc__(self):
        free(self.sorted_rules_huge)

    def decode(self, words_lm, runs, oov_at, bint count_minimized_recombinations=False):
        self.nodes.clear()
        self.node_states.clear()
        self.node_cuts.clear()
        self.trie_of_list.clear()
        self.partial_lm.clear()
        self.list_score.clear()
        self.partial_pops = 0
        self.partial_pushes = 0
        self.partial_lm_novel = 0
        self.initial_edges = 0
        self.corner_keys = 0
        self.complete_scored = 0
        self.flat_tails = 0
        self.flat_leaves.clear()
        self.trace_rows.clear()
        ChartSearch.decode(self, words_lm, runs, oov_at, count_minimized_recombinations)

    def search_trace(self):
        """With trace on, the last sentence's queue searches (one per cell, unary round and kind of group), as
        a dict of arrays (TRACE_FIELDS): cell, round, the pop limit, complete pops, items made, partial pops,
        the lowest queue key of a complete pop, and the queue's best key when the search stopped (-inf: the
        queue ran empty), and the number of groups."""
        rows = np.asarray([self.trace_rows[t] for t in range(self.trace_rows.size())], dtype=np.float64)
        rows = rows.reshape(-1, len(TRACE_FIELDS))
        return {name: rows[:, k] for k, name in enumerate(TRACE_FIELDS)}

    @property
    def n_trie_nodes(self):
        return self.nodes.size()

    def trie_nodes(self):
        """The last sentence's trie nodes as arrays (for tests): score, first_child, n_children,
        rank (-1: inner node), item, depth (tokens revealed; a leaf: its item's tokens + 1, a single item's
        root SINGLE_ITEM_DEPTH), n_items (leaves below), reveals and below (side bits, see TrieNode); n_states
        and item_state_offset (the item's fields copied into the node) beside the chart's own (item_n_states_of_chart,
        item_state_offset_of_chart), and whether the node starts a 64-byte cache line (aligned)."""
        cdef Py_ssize_t n = self.nodes.size(), t
        out = {name: np.empty(n, np.int32) for name in ("first_child", "n_children", "rank", "item", "depth", "n_items")}
        out["score"] = np.empty(n, np.float64)
        for name in ("n_states", "item_state_offset", "item_n_states_of_chart", "item_state_offset_of_chart"):
            out[name] = np.empty(n, np.int32)
        out["aligned"] = np.empty(n, np.bool_)
        out["reveals"] = np.empty(n, np.uint32)
        out["below"] = np.empty(n, np.uint32)
        for t in range(n):
            out["n_items"][t] = self.nodes[t].n_items
            out["n_states"][t] = self.nodes[t].n_states
            out["item_state_offset"][t] = self.nodes[t].item_state_offset
            out["item_n_states_of_chart"][t] = self.items[self.nodes[t].item].n_states
            out["item_state_offset_of_chart"][t] = self.items[self.nodes[t].item].state_offset
            out["aligned"][t] = (<size_t>&self.nodes[t]) % 64 == 0
            out["reveals"][t] = self.nodes[t].reveals
            out["below"][t] = self.nodes[t].below
            out["score"][t] = self.nodes[t].score
            out["first_child"][t] = self.nodes[t].first_child
            out["n_children"][t] = self.nodes[t].n_children
            out["rank"][t] = self.nodes[t].rank
            out["item"][t] = self.nodes[t].item
            out["depth"][t] = self.nodes[t].depth
        return out

    # ---- boundary tokens of an item (KenLM ChartStates, one per block)

    cdef size_t _memory_bytes(self) noexcept nogil:
        """ChartSearch's count (memory_budget_mb) plus this search's own per-sentence containers: the tries,
        their partial states, the queued partial edges."""
        return (ChartSearch._memory_bytes(self) + self.nodes.size() * sizeof(TrieNode)
                + (self.node_states.size() + self.complete_states.size()) * sizeof(ChartState)
                + self.partial_edges.size() * sizeof(PartialEdge)
                + (self.trie_of_list.size() + self.flat_leaves.size()) * sizeof(int32_t)
                + self.list_score.size() * sizeof(double) + self.trie_tokens.size() * sizeof(uint64_t))

    cdef int _append_tokens(self, int32_t item, size_t base) noexcept nogil:
        """Write the item's boundary tokens, in reveal order, to trie_tokens[base:] (the token's value: a left
        state's n-gram pointer, a right state's word or an end token) and trie_token_sides (its side,
        4 * block + SIDE_*: a token is the pair, hashed by _token_key only where the trie branches), and to
        trie_token_bits the (block, side) bit (side_bit) of each that changes _partial_state's result (0: a
        long block's end tokens, which reveal no word); returns their number. The arrays have room for
        2 * KENLM_MAX_ORDER tokens a block (both sides' words and end tokens) from base on."""
        cdef const Item *it = &self.items[item]
        cdef const ChartState *st
        cdef int s, k, la, lb, total = 0
        cdef uint32_t bit, left_side, right_side
        cdef uint64_t *tokens
        cdef uint32_t *sides
        cdef uint32_t *bits
        tokens = self.trie_tokens.data() + base
        sides = self.trie_token_sides.data() + base
        bits = self.trie_token_bits.data() + base
        for s in range(it.n_states):
            st = &self.states[it.state_offset + s]
            left_side = 4 * s + SIDE_LEFT
            if not st.left.full:
                bit = side_bit(s, SIDE_SHORT)
                for k in range(st.left.length):
                    tokens[total] = st.left.pointers[k]
                    sides[total] = left_side
                    bits[total] = bit
                    total += 1
                tokens[total] = END_SHORT
                sides[total] = left_side
                bits[total] = bit
                total += 1
                continue
            right_side = 4 * s + SIDE_RIGHT
            # Alternate left and right, outermost first, until one side runs out.
            la = st.left.length + 1
            lb = st.right.length + 1
            for k in range(la if la > lb else lb):
                if k < la:
                    tokens[total] = st.left.pointers[k] if k < st.left.length else END_LONG
                    sides[total] = left_side
                    bits[total] = side_bit(s, SIDE_LEFT) if k < st.left.length else 0
                    total += 1
                if k < lb:
                    tokens[total] = <uint64_t>st.right.words[k] if k < st.right.length else END_RIGHT
                    sides[total] = right_side
                    bits[total] = side_bit(s, SIDE_RIGHT) if k < st.right.length else 0
                    total += 1
        return total

    cdef inline uint64_t _token_key(self, size_t position) noexcept nogil:
        """The hash of the token at trie_tokens[position]: its value mixed into its side's key, cky_mix(0x7A11,
        side) (from a table for the first blocks)."""
        cdef uint32_t side = self.trie_token_sides[position]
        cdef uint64_t side_key = self.side_keys[side] if side < 4 * SIDE_KEY_BLOCKS else \
            cky_mix(<uint64_t>0x7A11, <uint64_t>side)
        return cky_mix(side_key, self.trie_tokens[position])

    cdef unsigned char _partial_state(self, int32_t item, int depth, int block, ChartState *out) noexcept nogil:
        """Block `block` of `item`'s state as far as its first `depth` tokens reveal it; returns what it leaves
        out (_lm.score_partial_target's cut: bit 0 left words, bit 1 right words)."""
        cdef const Item *it = &self.items[item]
        cdef const ChartState *st
        cdef int s, n_block, k, la, lb, a = 0, b = 0
        for s in range(block):
            st = &self.states[it.state_offset + s]
            depth -= (st.left.length + st.right.length + 2) if st.left.full else (st.left.length + 1)
        st = &self.states[it.state_offset + block]
        n_block = (st.left.length + st.right.length + 2) if st.left.full else (st.left.length + 1)
        out[0] = st[0]
        if depth >= n_block:
            return 0
        if depth < 0:
            depth = 0
        if not st.left.full:
            a = depth
        else:
            la = st.left.length + 1
            lb = st.right.length + 1
            k = 0
            while depth > 0:
                if k < la:
                    if k < st.left.length:
                        a += 1
                    depth -= 1
                if k < lb and depth > 0:
                    if k < st.right.length:
                        b += 1
                    depth -= 1
                k += 1
        return cut_chart_state(st, a, b, out)

    # ---- tries

    cdef inline int32_t _trie(self, int32_t list_lo, int32_t list_n) noexcept nogil:
        """The trie over item_lists[list_lo:list_lo + list_n] (made once per sentence), or -1 for no tail.
        trie_of_list first (the pop loop's look-ahead requested its line; a trie is only made over a list whose
        first entry is an item), item_lists only for a list without one (a read that misses the cache)."""
        if list_n <= 0:
            return -1
        if <size_t>list_lo < self.trie_of_list.size() and self.trie_of_list[list_lo] >= 0:
            return self.trie_of_list[list_lo]
        if self.item_lists[list_lo] < 0:
            return -1
        return self._new_trie(list_lo, list_n)

    cdef inline void _set_item(self, int32_t slot, int32_t item) noexcept nogil:
        """nodes[slot]'s item, with the item's fields a pop reads copied in (n_states, state_offset)."""
        self.nodes[slot].item = item
        self.nodes[slot].n_states = self.items[item].n_states
        self.nodes[slot].item_state_offset = self.items[item].state_offset

    cdef int32_t _new_trie(self, int32_t list_lo, int32_t list_n) noexcept nogil:
        """_trie's root, made: of two or more items, only the root's score and best item, until an edge over it
        is first popped (_grow_trie): most vertices' tries are never needed (their groups' initial edges are
        never popped)."""
        cdef int32_t root, best
        if <size_t>list_lo >= self.trie_of_list.size():
            self.trie_of_list.resize(self.item_lists.size(), -1)
        root = self.nodes.size()
        self.nodes.resize(root + 1)
        self.trie_of_list[list_lo] = root
        if list_n == 1:
            self._grow_trie(root, list_lo, list_n)
            return root
        best = self.item_lists[list_lo]
        self.nodes[root].score = self.items[best].score
        self._set_item(root, best)
        self.nodes[root].rank = -1
        self.nodes[root].n_items = list_n
        self.nodes[root].flat_lo = -1
        self.nodes[root].first_child = list_lo  # (until grown)
        self.nodes[root].n_children = -1        # not grown yet
        self.nodes[root].depth = 0
        self.nodes[root].reveals = 0xFFFFFFFFu
        self.nodes[root].below = 0xFFFFFFFFu
        self.nodes[root].state_offset = -1
        self.nodes[root].state_key = 0
        return root

    cdef void _grow_trie(self, int32_t root, int32_t list_lo, int32_t list_n) noexcept nogil:
        """Build the trie of item_lists[list_lo:list_lo + list_n] below nodes[root]."""
        cdef int32_t k, item
        cdef const Item *it
        cdef const ChartState *st
        cdef int s, n_tokens = 0
        if list_n == 1:
            # A single item: the leaf itself, as _build_node makes it, but its tokens not counted (a leaf's depth
            # is never read by the search, and counting them read the item's states: a cache miss per trie); a
            # root reveals everything and has nothing below.
            item = self.item_lists[list_lo]
            it = &self.items[item]
            self.nodes[root].score = it.score
            self._set_item(root, item)
            self.nodes[root].rank = 0
            self.nodes[root].n_items = 1
            self.nodes[root].flat_lo = -1
            self.nodes[root].first_child = -1
            self.nodes[root].n_children = 0
            self.nodes[root].depth = SINGLE_ITEM_DEPTH
            self.nodes[root].reveals = 0xFFFFFFFFu
            self.nodes[root].below = 0
            self._set_node_states(root)
            return
        self.ranks_scratch.resize(list_n)
        self.tokens_scratch.resize(list_n)
        self.trie_token_lo.resize(list_n + 1)
        for k in range(list_n):
            # The items' records and states are read at random (most miss the cache): requested ahead, each
            # item's record GROW_AHEAD items on, its state (from the record requested then) half as far on.
            if k + GROW_AHEAD < list_n:
                cky_prefetch(&self.items[self.item_lists[list_lo + k + GROW_AHEAD]])
            if k + GROW_AHEAD // 2 < list_n:  # (both lines of a 96-byte state)
                st = &self.states[self.items[self.item_lists[list_lo + k + GROW_AHEAD // 2]].state_offset]
                cky_prefetch(st)
                cky_prefetch(<const char *>st + sizeof(ChartState) - 1)
            item = self.item_lists[list_lo + k]
            self.ranks_scratch[k] = k
            self.trie_token_lo[k] = n_tokens
            if <size_t>(n_tokens + 2 * KENLM_MAX_ORDER * self.items[item].n_states) > self.trie_tokens.size():
                self.trie_tokens.resize(2 * (n_tokens + 2 * KENLM_MAX_ORDER * self.items[item].n_states))
                self.trie_token_sides.resize(self.trie_tokens.size())
                self.trie_token_bits.resize(self.trie_tokens.size())
            n_tokens += self._append_tokens(item, n_tokens)
        self.trie_token_lo[list_n] = n_tokens
        if list_n <= self.flat_items:
            self._build_shallow(root, list_lo, list_n)
        else:
            self._build_node(root, list_lo, 0, list_n, 0, 0)
        self.nodes[root].reveals = 0xFFFFFFFFu  # (a root is never a refinement)

    cdef void _build_shallow(self, int32_t root, int32_t list_lo, int32_t list_n) noexcept nogil:
        """A small list's trie (at most flat_items items, so a tail over it is always flat: split by its items,
        never walked down): the root, revealing the tokens all its items share (as _build_node's), with the items
        as its leaves in list order (best first), which are also its flat leaves. No inner node, no sort."""
        cdef int32_t k, first_child, item
        cdef int depth = self._shared_depth(0, list_n, 0), d  # (ranks_scratch is the identity here: list order)
        cdef uint32_t reveals, below = 0
        item = self.item_lists[list_lo]
        self.nodes[root].score = self.items[item].score
        self._set_item(root, item)
        self.nodes[root].rank = -1
        self.nodes[root].n_items = list_n
        self.nodes[root].depth = <int16_t>depth
        self._set_node_states(root)
        first_child = self.nodes.size()
        for k in range(list_n):
            reveals = 0
            for d in range(self.trie_token_lo[k] + depth, self.trie_token_lo[k + 1]):
                reveals |= self.trie_token_bits[d]
            self._push_leaf(self.item_lists[list_lo + k], k, self.trie_token_lo[k + 1] - self.trie_token_lo[k] + 1,
                            reveals)
            below |= reveals
        self.nodes[root].first_child = first_child
        self.nodes[root].n_children = list_n
        self.nodes[root].below = below
        self.nodes[root].flat_lo = self.flat_leaves.size()
        for k in range(list_n):
            self.flat_leaves.push_back(first_child + k)

    cdef void _build_node(self, int32_t slot, int32_t list_lo, int32_t lo, int32_t hi, int depth,
                          int parent_depth) noexcept nogil:
        """Fill nodes[slot] over ranks_scratch[lo:hi] (best first), which share their first depth tokens
        (the parent revealed parent_depth of them). Path compression: a node goes down as long as its
        items share the next token (one refinement reveals them all), and a single item is a leaf."""
        cdef int32_t best = self.item_lists[list_lo + self.ranks_scratch[lo]]
        cdef int32_t k, first_child, n_groups, start, item, rank
        cdef int32_t best_lo = self.trie_token_lo[self.ranks_scratch[lo]]
        cdef int n_tokens = self.trie_token_lo[self.ranks_scratch[lo] + 1] - best_lo, d
        cdef size_t base = self.child_order.size()  # this node's children in child_order[base:] and
        cdef size_t b                                # child_bounds[2 * base:] (a stack shared with the
                                                     # recursion: no allocation per node)
        cdef CkySortEntry entry
        cdef uint32_t reveals = 0, below = 0
        cdef int32_t position
        self.nodes[slot].score = self.items[best].score
        self._set_item(slot, best)
        self.nodes[slot].rank = -1
        self.nodes[slot].n_items = hi - lo
        self.nodes[slot].flat_lo = -1
        if hi - lo == 1:  # one item: the leaf itself
            for d in range(parent_depth, n_tokens):
                reveals |= self.trie_token_bits[best_lo + d]
            self.nodes[slot].first_child = -1
            self.nodes[slot].n_children = 0
            self.nodes[slot].rank = self.ranks_scratch[lo]
            self.nodes[slot].depth = <int16_t>(n_tokens + 1)
            self.nodes[slot].reveals = reveals
            self.nodes[slot].below = 0
            self._set_node_states(slot)
            return
        depth = self._shared_depth(lo, hi, depth)  # (the tokens the items all share: revealed at once)
        for d in range(parent_depth, depth):
            reveals |= self.trie_token_bits[best_lo + d]
        self.nodes[slot].depth = <int16_t>depth
        self.nodes[slot].reveals = reveals
        self.nodes[slot].below = 0
        self._set_node_states(slot)
        if depth >= n_tokens:
            # Every token revealed: the items themselves (equal states of different unary rounds).
            first_child = self.nodes.size()
            self.nodes[slot].first_child = first_child
            self.nodes[slot].n_children = hi - lo
            for k in range(lo, hi):
                self._push_leaf(self.item_lists[list_lo + self.ranks_scratch[k]], self.ranks_scratch[k], depth + 1, 0)
            return
        # The tokens at depth (they differ), hashed (0: the item has no more): one child per token.
        for k in range(lo, hi):
            rank = self.ranks_scratch[k]
            position = self.trie_token_lo[rank] + depth
            self.tokens_scratch[k] = self._token_key(position) if position < self.trie_token_lo[rank + 1] else 0
        cky_stable_sort_by_key(&self.tokens_scratch[lo], &self.ranks_scratch[lo], hi - lo)
        start = lo
        for k in range(lo + 1, hi + 1):
            if k == hi or self.tokens_scratch[k] != self.tokens_scratch[start]:
                entry.symbol = 0
                entry.score = self.items[self.item_lists[list_lo + self.ranks_scratch[start]]].score
                entry.id = self.child_order.size() - base
                self.child_order.push_back(entry)
                self.child_bounds.push_back(start)
                self.child_bounds.push_back(k)
                start = k
        cky_sort_entries(&self.child_order[base], self.child_order.size() - base)  # children best first
        n_groups = self.child_order.size() - base
        first_child = self.nodes.size()
        self.nodes[slot].first_child = first_child
        self.nodes[slot].n_children = n_groups
        self.nodes.resize(first_child + n_groups)
        for k in range(n_groups):
            b = 2 * (base + self.child_order[base + k].id)
            self._build_node(first_child + k, list_lo, self.child_bounds[b], self.child_bounds[b + 1], depth + 1, depth)
            below |= self.nodes[first_child + k].reveals | self.nodes[first_child + k].below
        self.nodes[slot].below = below
        self.child_order.resize(base)
        self.child_bounds.resize(2 * base)

    cdef int _shared_depth(self, int32_t lo, int32_t hi, int depth) noexcept nogil:
        """How many tokens (value and side) the items of ranks_scratch[lo:hi] all share, given that they share the
        first depth: as many as the best one's, at most."""
        cdef int32_t best_lo = self.trie_token_lo[self.ranks_scratch[lo]], k, rank, position
        cdef int n_tokens = self.trie_token_lo[self.ranks_scratch[lo] + 1] - best_lo
        cdef uint64_t value
        cdef uint32_t side
        while depth < n_tokens:
            value = self.trie_tokens[best_lo + depth]
            side = self.trie_token_sides[best_lo + depth]
            for k in range(lo + 1, hi):
                rank = self.ranks_scratch[k]
                position = self.trie_token_lo[rank] + depth
                if position >= self.trie_token_lo[rank + 1] or self.trie_tokens[position] != value or \
                        self.trie_token_sides[position] != side:
                    return depth
            depth += 1
        return depth

    cdef void _push_leaf(self, int32_t item, int32_t rank, int depth, uint32_t reveals) noexcept nogil:
        """Append a leaf for an item (rank: its position in its list; depth: its tokens + 1; reveals: the side bits
        of its tokens beyond its parent's) with its states' key."""
        cdef TrieNode leaf
        leaf.score = self.items[item].score
        leaf.first_child = -1
        leaf.n_children = 0
        leaf.rank = rank
        leaf.item = item
        leaf.n_states = self.items[item].n_states
        leaf.item_state_offset = self.items[item].state_offset
        leaf.depth = <int16_t>depth
        leaf.reveals = reveals
        leaf.below = 0
        leaf.n_items = 1
        leaf.flat_lo = -1
        self.nodes.push_back(leaf)
        self._set_node_states(self.nodes.size() - 1)

    cdef void _set_node_states(self, int32_t slot) noexcept nogil:
        """A node's partial states (made once: every partial edge over the node reads them) and their key."""
        cdef int32_t item = self.nodes[slot].item
        cdef int s, n_states = self.nodes[slot].n_states
        cdef int32_t offset
        cdef uint64_t key = 0x6A09E667F3BCC909ULL
        cdef unsigned char cut
        if self.nodes[slot].rank >= 0:  # a leaf: the item's own states
            self.nodes[slot].state_offset = -1
            for s in range(n_states):
                key = cky_mix(key, self.state_hashes[self.nodes[slot].item_state_offset + s])
        else:
            offset = self.node_states.size()
            self.node_states.resize(offset + n_states)
            self.node_cuts.resize(offset + n_states)
            self.nodes[slot].state_offset = offset
            for s in range(n_states):
                cut = self._partial_state(item, self.nodes[slot].depth, s, &self.node_states[offset + s])
                self.node_cuts[offset + s] = cut
                key = cky_mix(key, chart_state_hash(&self.node_states[offset + s]) + cut)
        self.nodes[slot].state_key = key

    cdef void _flatten(self, int32_t node) noexcept nogil:
        """The node's leaves (items) best first in flat_leaves[nodes[node].flat_lo:][:n_items] (once)."""
        cdef size_t base = self.child_order.size(), k
        cdef int32_t t, c
        cdef CkySortEntry entry
        if self.nodes[node].flat_lo >= 0:
            return
        self.scratch.clear()
        self.scratch.push_back(node)
        while self.scratch.size() > 0:
            t = self.scratch.back()
            self.scratch.pop_back()
            if self.nodes[t].rank >= 0:
                entry.symbol = 0
                entry.score = self.nodes[t].score
                entry.id = t
                self.child_order.push_back(entry)
                continue
            for c in range(self.nodes[t].first_child, self.nodes[t].first_child + self.nodes[t].n_children):
                self.scratch.push_back(c)
        cky_sort_entries(&self.child_order[base], self.child_order.size() - base)
        self.nodes[node].flat_lo = self.flat_leaves.size()
        for k in range(base, self.child_order.size()):
            self.flat_leaves.push_back(self.child_order[k].id)
        self.child_order.resize(base)

    # ---- partial edges

    cdef double _tail_score(self, int32_t node, int32_t first, bint flat) noexcept nogil:
        """The score of a tail: the best item of node's children[first:], or (flat) of its items[first:]."""
        if node < 0:
            return 0.0
        if flat:
            return self.nodes[self.flat_leaves[self.nodes[node].flat_lo + first]].score
        if first == 0:
            return self.nodes[node].score
        return self.nodes[self.nodes[node].first_child + first].score

    cdef float _partial_lm(self, uint64_t key, const int32_t *target, Py_ssize_t length, unsigned long long calls,
                           const PartialEdge *edge) noexcept nogil:
        """The LM score of a target side over the edge's tails' partial states (KenLM RuleScore),
        through the partial-edge cache (key: the target's hash and the tail nodes' state keys).
        Counted as `calls` LM queries (_lm_calls), as ChartSearch._score counts them (novel: not from the cache)."""
        cdef const float *cached
        cdef int32_t node, offset
        cdef int t, s
        cdef float lm
        self.lm_queries += calls
        cached = self.partial_lm.find(key)
        if cached != NULL:
            return cached[0]
        self.child_pointers.clear()
        self.child_cuts.clear()
        for t in range(2):
            node = edge.node[t]
            if node < 0:
                continue
            offset = self.nodes[node].state_offset
            for s in range(self.nodes[node].n_states):
                if offset < 0:
                    self.child_pointers.push_back(&self.states[self.nodes[node].item_state_offset + s])
                    self.child_cuts.push_back(0)
                else:
                    self.child_pointers.push_back(&self.node_states[offset + s])
                    self.child_cuts.push_back(self.node_cuts[offset + s])
        if length <= 0:
            lm = 0.0
        else:
            lm = score_partial_target(self.model, target, length, self.child_pointers.data(), self.child_cuts.data(), NULL)
        self.lm_queries_novel += calls
        self.partial_lm_novel += 1
        if self.partial_lm.size() < PARTIAL_LM_ENTRIES:
            self.partial_lm.set(key, lm)
        return lm

    cdef void _score_partial(self, PartialEdge *edge) noexcept nogil:
        """The edge's score: rule, tails and the LM over its tails' partial states. An initial edge
        (tails at their roots) takes the rule's words-only LM estimate instead (no LM query: most
        initial edges are never popped). An edge whose tails are all items is scored exactly
        (_score_complete) and keeps its state for its pop."""
        cdef Group *group = &self.groups[edge.group]
        cdef const SortedRule *sorted_rule
        cdef int32_t node
        cdef int t, s
        cdef double score = self._tail_score(edge.node[0], edge.first[0], edge.flat[0]) + \
            self._tail_score(edge.node[1], edge.first[1], edge.flat[1])
        cdef bint complete = True
        cdef uint64_t key
        cdef const int32_t *target
        cdef Py_ssize_t length
        cdef unsigned long long calls
        cdef float lm
        cdef int32_t inline_target[2]
        edge.complete = -1
        score += edge.fixed
        if not edge.scores_lm or edge.estimated:  # (the estimate stays in edge.lm)
            edge.score = score + self.weight_lm * edge.lm
            return
        # (calls: the LM queries the target counts for, as ChartSearch._score counts them: a first child is
        # copied, not scored, and <s> is context, not a query; from the record, not the target's first symbol)
        if group.kind == GROUP_RULES:
            sorted_rule = self._sorted_rule(group, edge.rule_rank)
            length = sorted_rule.target_length
            target = self._rule_target(sorted_rule, inline_target)
            key = sorted_rule.target_hash
            calls = self._rule_target_calls(sorted_rule)
        elif group.kind == GROUP_GLUE_START:
            target = self.glue_start_target
            length = 2
            key = CKY_GLUE_START_HASH
            calls = 1
        else:
            target = CKY_GLUE_CONCAT_TARGET
            length = 2
            key = CKY_GLUE_CONCAT_HASH
            calls = 1
        for t in range(2):
            if edge.node[t] >= 0 and self.nodes[edge.node[t]].rank < 0:
                complete = False
        if complete:
            self.child_pointers.clear()
            for t in range(2):
                if edge.node[t] < 0:
                    continue
                node = edge.node[t]
                for s in range(self.nodes[node].n_states):
                    self.child_pointers.push_back(&self.states[self.nodes[node].item_state_offset + s])
            edge.complete = self.n_complete
            if <size_t>self.n_complete >= self.complete_states.size():  # (grown, never shrunk: no per-edge resize)
                self.complete_states.resize(2 * self.n_complete + 64)
            self.n_complete += 1
            lm = self._score_complete(target, length, calls, &self.complete_states[edge.complete])
            self.complete_scored += 1
        else:
            for t in range(2):
                key = cky_mix(key, self.nodes[edge.node[t]].state_key if edge.node[t] >= 0 else ABSENT_TAIL_KEY)
            lm = self._partial_lm(key, target, length, calls, edge)
        edge.lm = lm
        edge.score = score + self.weight_lm * lm

    cdef float _score_complete(self, const int32_t *target, Py_ssize_t length, unsigned long long calls,
                               ChartState *out) noexcept nogil:
        """The exact LM score of a complete edge over self.child_pointers, straight from KenLM: most are
        novel (each is scored once), and a probe of the chart's large LM cache costs more than the query.
        (The state's hash is made when the edge is popped: _complete_hypothesis.) Counted as `calls` LM queries."""
        cdef float lm
        self.lm_queries += calls
        self.lm_queries_novel += calls
        if length == 0:
            empty_chart_state(out)
            lm = 0.0
        else:
            lm = score_target(self.model, target, length, self.child_pointers.data(), out, NULL)
        return lm

    cdef void _complete_hypothesis(self, const PartialEdge *edge, Hypothesis *hyp) noexcept nogil:
        """The hypothesis of a popped edge whose tails are all items (as ChartSearch._evaluate makes it)."""
        cdef Group *group = &self.groups[edge.group]
        cdef const SortedRule *sorted_rule
        hyp.group = edge.group
        hyp.rule_rank = edge.rule_rank
        hyp.left_rank = self.nodes[edge.node[0]].rank if edge.node[0] >= 0 else 0
        hyp.right_rank = self.nodes[edge.node[1]].rank if edge.node[1] >= 0 else 0
        hyp.state_offset = self.pending_states.size()
        self.pending_states.push_back(self.complete_states[edge.complete])
        self.pending_hashes.push_back(chart_state_hash(&self.complete_states[edge.complete]))
        hyp.n_states = 1
        if group.kind == GROUP_RULES:
            sorted_rule = self._sorted_rule(group, edge.rule_rank)
            hyp.rule = sorted_rule.rule
            hyp.lhs = sorted_rule.lhs
        else:
            hyp.rule = EDGE_GLUE_START if group.kind == GROUP_GLUE_START else EDGE_GLUE_CONCAT
            hyp.lhs = self.goal_symbol
        hyp.lm = edge.lm
        hyp.score = edge.score
        self.edges_proposed += 1

    cdef inline const SortedRule *_sorted_rule(self, const Group *group, int64_t rule_rank) noexcept nogil:
        """The SortedRule record of a GROUP_RULES group's rule of rank rule_rank."""
        return &self.sorted_rules[(self.single_offset if group.single else 0) + group.rules_lo + rule_rank]

    cdef inline const int32_t *_rule_target(self, const SortedRule *sorted_rule, int32_t *inline_target) noexcept nogil:
        """A rule's LM target symbols: one or two (nine in ten of the exact scorings) are its record's first and
        last, copied to inline_target, which saves reading rule_target_lm (most often a cache miss: 3% of
        the CPU at pop limit 1000); longer targets are read there."""
        if sorted_rule.target_length <= 2:
            inline_target[0] = sorted_rule.target_first
            inline_target[1] = sorted_rule.target_last
            return inline_target
        return &self.rule_target_lm[sorted_rule.target_lo]

    cdef inline unsigned long long _rule_target_calls(self, const SortedRule *sorted_rule) noexcept nogil:
        """The LM queries a rule's target counts for, as ChartSearch._score counts them: a first child is copied,
        not scored (read from the record, not from the target's first symbol)."""
        if sorted_rule.target_length > 0 and sorted_rule.target_first < 0:
            return sorted_rule.target_length - 1
        return sorted_rule.target_length

    cdef void _add_complete_hypothesis(self, int c, int round, const PartialEdge *edge,
                                       Hypothesis *hyp) noexcept nogil:
        """_add_hypothesis of a complete edge's hypothesis (_complete_hypothesis): its tail items and their
        inside scores are its tails' leaves' (the same numbers), not read again from the item records."""
        cdef int32_t tail_items[2]
        cdef double tails = 0.0
        cdef int32_t node
        cdef int t
        cdef const Group *group
        for t in range(2):
            node = edge.node[t]
            if node >= 0:
                tail_items[t] = self.nodes[node].item
                tails += self.nodes[node].score
            else:  # no tail: what the group's list holds there, as _add_hypothesis reads it
                group = &self.groups[edge.group]
                tail_items[t] = self.item_lists[group.left_lo if t == 0 else group.right_lo]
                if tail_items[t] >= 0:
                    tails += self.items[tail_items[t]].score
        self._add_hypothesis_over(c, round, hyp, tail_items[0], tail_items[1], tails)

    cdef inline bint _take_pop(self, int c, int round, const PartialEdge *edge, Hypothesis *hyp, int *pops,
                               double *lowest_pop) noexcept nogil:
        """A complete pop's hypothesis into the chart, counted (false: the search goes on)."""
        if edge.complete >= 0:
            self._add_complete_hypothesis(c, round, edge, hyp)
        else:
            self._add_hypothesis(c, round, hyp)
        pops[0] += 1
        if hyp.score < lowest_pop[0]:
            lowest_pop[0] = hyp.score
        return False

    cdef inline bint _request_ahead(self, int32_t *ahead_index) noexcept nogil:
        """What the queue's best entry (most often the next pop) reads first, requested now: its edge's line
        (or its group's and cursor's); false if the queue is empty."""
        if self.queue.size() == 0:
            return False
        ahead_index[0] = self.queue[0].index
        if ahead_index[0] >= 0:
            cky_prefetch(self.partial_edges.data() + ahead_index[0])
        else:
            cky_prefetch(self.groups.data() + ~ahead_index[0])
            cky_prefetch(self.group_cursor.data() + ~ahead_index[0])
        return True

    cdef void _set_rule(self, PartialEdge *edge) noexcept nogil:
        """Per tail, the sides whose words the edge's LM score sees (edge.relevant): read only for edges that
        are scored or split, not for every initial edge (most are never popped)."""
        cdef Group *group = &self.groups[edge.group]
        cdef const SortedRule *sorted_rule
        cdef int32_t first = CKY_GLUE_CONCAT_TARGET[0], last = CKY_GLUE_CONCAT_TARGET[1]
        cdef Py_ssize_t length = 2
        cdef int t, n_left_blocks
        if not self.lm_visibility:
            return
        if group.kind == GROUP_RULES:
            sorted_rule = self._sorted_rule(group, edge.rule_rank)
            first = sorted_rule.target_first
            last = sorted_rule.target_last
            length = sorted_rule.target_length
        elif group.kind == GROUP_GLUE_START:
            first = self.glue_start_target[0]
            last = self.glue_start_target[1]
        n_left_blocks = self.nodes[edge.node[0]].n_states if edge.node[0] >= 0 else 0
        for t in range(2):
            if edge.node[t] >= 0:
                edge.relevant[t] = rule_relevant_sides(first, last, length, n_left_blocks, t)

    cdef inline int32_t _store_edge(self, const PartialEdge *edge) noexcept nogil:
        """Keep a partial edge for its queue entry: in the slot of the last edge popped, if free (in cache,
        and partial_edges stays as small as the queue), else a new one; returns the slot."""
        cdef int32_t slot
        if self.free_edges.size() > 0:
            slot = self.free_edges.back()
            self.free_edges.pop_back()
            self.partial_edges[slot] = edge[0]
            return slot
        self.partial_edges.push_back(edge[0])
        if self.partial_edges.size() < self.partial_edges.capacity():  # the next new slot's line, for its write
            cky_prefetch(self.partial_edges.data() + self.partial_edges.size())
        return self.partial_edges.size() - 1

    cdef void _queue_initial(self, int32_t g, int32_t rule_rank) noexcept nogil:
        """Queue group g's initial edge of rule rule_rank (tails at their roots) as a bare queue entry,
        index ~g, scored by the rule's words-only LM estimate: the edge itself (its tries, rule id, the
        sides its LM sees) is made only when popped (_initial_edge), as most are never popped."""
        cdef Group *group = &self.groups[g]
        cdef const SortedRule *sorted_rule
        cdef CkyHeapEntry entry
        cdef double score
        cdef float lm = 0.0
        if rule_rank >= group.n_rules:
            return
        score = self.group_cursor[g].tails
        if group.kind == GROUP_RULES:
            sorted_rule = self._sorted_rule(group, rule_rank)
            score += sorted_rule.score
            if not isnan(sorted_rule.estimate):
                lm = sorted_rule.estimate
        else:
            sorted_rule = NULL
            score += group.fixed_score
        self.group_cursor[g].rank = rule_rank
        entry.score = score + self.weight_lm * lm
        if self._keyed_at_corner(sorted_rule):
            entry.score = self._corner_key(g, rule_rank)
        entry.index = ~g
        cky_queue_push(self.queue, entry.score, entry.index)
        self.initial_edges += 1
        self.partial_pushes += 1

    cdef double _corner_key(self, int32_t g, int32_t rule_rank) noexcept nogil:
        """The exact score of group g's rule rule_rank over its tails' best items (cube pruning's corner): an
        initial edge's queue key where _keyed_at_corner says so. With check_corner_keys (tests), each key is
        compared with _evaluated_corner's (corner_key_mismatches)."""
        cdef const Group *group = &self.groups[g]
        cdef const SortedRule *sorted_rule
        cdef int32_t tail, inline_target[2]
        cdef int t, s
        cdef double tails = 0.0
        cdef float lm = 0.0
        cdef double key
        cdef ChartState out
        if group.kind == GROUP_RULES:
            sorted_rule = self._sorted_rule(group, rule_rank)
            if not isnan(sorted_rule.estimate):
                # _evaluate's number, from the rule's record and straight from KenLM: the chart's LM cache
                # would only grow by it (these keys are not scored again)
                self.child_pointers.clear()
                for t in range(2):
                    tail = self.item_lists[group.left_lo if t == 0 else group.right_lo]
                    if tail >= 0:
                        tails += self.items[tail].score
                        for s in range(self.items[tail].n_states):
                            self.child_pointers.push_back(&self.states[self.items[tail].state_offset + s])
                lm = self._score_complete(self._rule_target(sorted_rule, inline_target), sorted_rule.target_length,
                                          self._rule_target_calls(sorted_rule), &out)
                key = tails + sorted_rule.score + self.weight_lm * lm
                self.corner_keys += 1
                if self.check_corner_keys and self._evaluated_corner(g, rule_rank) != key:
                    self.corner_key_mismatches += 1
                return key
        # a glue group or a carrying rule (no LM score): as cube pruning scores its corner
        self.corner_keys += 1
        return self._evaluated_corner(g, rule_rank)

    cdef double _evaluated_corner(self, int32_t g, int32_t rule_rank) noexcept nogil:
        """Group g's rule rule_rank over its tails' best items, scored as cube pruning scores it (_evaluate)."""
        cdef Hypothesis hyp
        self.pending_states.clear()
        self.pending_hashes.clear()
        self._evaluate(g, rule_rank, 0, 0, &hyp)
        self.edges_proposed -= 1  # (a key, not a proposed edge)
        self.pending_states.clear()
        self.pending_hashes.clear()
        return hyp.score

    cdef inline bint _keyed_at_corner(self, const SortedRule *sorted_rule) noexcept nogil:
        """Whether an initial edge of this rule (its record; NULL for a glue group) is queued at its exact corner
        instead of its words-only estimate: a rule with a word right after a tail whose words-only estimate is
        more than junction_threshold below what that word can score in context (SortedRule.junction_gap)."""
        return sorted_rule != NULL and sorted_rule.junction_gap > JUNCTION_GAP_UNITS_C * self.junction_threshold

    cdef void _initial_edge(self, int32_t g, PartialEdge *edge) noexcept nogil:
        """The popped initial edge of group g (its queued rule rank), scored from the rule's words-only estimate
        whatever its queue key was."""
        cdef Group *group = &self.groups[g]
        cdef const SortedRule *sorted_rule
        edge.group = g
        edge.rule_rank = self.group_cursor[g].rank
        edge.node[0] = self._trie(group.left_lo, group.n_left)
        edge.node[1] = self._trie(group.right_lo, group.n_right)
        group = &self.groups[g]
        edge.first[0] = 0
        edge.first[1] = 0
        edge.flat[0] = 0
        edge.flat[1] = 0
        edge.lm = 0.0
        edge.complete = -1
        edge.relevant[0] = edge.relevant[1] = 0xFFFFFFFFu
        if group.kind == GROUP_RULES:
            sorted_rule = self._sorted_rule(group, edge.rule_rank)
            edge.fixed = sorted_rule.score
            edge.scores_lm = not isnan(sorted_rule.estimate)
            if edge.scores_lm:
                edge.lm = sorted_rule.estimate
        else:
            edge.fixed = group.fixed_score
            edge.scores_lm = True  # glue: GOAL X, or <s> X
        edge.initial = 1
        # The rule's words-only estimate, also when its tails are items (such an edge is scored exactly when
        # first popped, and re-queued if no longer the best). The rule id is read when popped too.
        edge.estimated = edge.scores_lm
        edge.score = edge.fixed + self.group_cursor[g].tails + self.weight_lm * edge.lm

    cdef void _search_groups(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil:
        """Replaces cube pruning inside a cell (ChartSearch._search calls it: once over all groups, or
        with pop_count = "real" once over the virtual groups with virtual_pop_limit and once over the
        real ones, split by ChartSearch._split_groups_by_kind; items of one kind are never the children
        of the other in the same cell and round). A split group's rules_lo moves past its real rules:
        its SortedRule records are read at the new position, which holds the same rule (the records
        follow the sorted rule arrays, real lhs first under pop_count = "real")."""
        cdef size_t k
        for k in range(self.list_score.size(), self.item_lists.size()):  # (item lists only grow, finished)
            self.list_score.push_back(self.items[self.item_lists[k]].score if self.item_lists[k] >= 0 else 0.0)
        self._queue_search(c, round, g_lo, g_hi, limit)

    cdef void _queue_search(self, int c, int round, int32_t g_lo, int32_t g_hi, int limit) noexcept nogil:
        """One queue of partial edges over groups[g_lo:g_hi], until `limit` complete hypotheses (0: no
        limit) or an empty queue."""
        cdef int32_t g, split, node, child, other, n_alternatives, next_leaf
        cdef const ChartState *next_state
        cdef int t, depth, split_depth = 0, pops = 0
        cdef PartialEdge edge, refined, next_edge
        cdef bint have_next = False
        cdef Hypothesis hyp
        cdef CkyHeapEntry top
        cdef int32_t n_groups
        cdef unsigned long long n_initial = 0
        cdef const Group *ahead
        cdef const Group *groups
        cdef const Group *group
        cdef GroupCursor *cursor
        cdef const double *list_score
        cdef const SortedRule *sorted_rule
        cdef CkyHeapEntry entry
        cdef double score
        cdef float lm
        cdef int32_t items_before = self.items.size()
        cdef unsigned long long partial_before = self.partial_pops
        cdef double lowest_pop = INFINITY
        cdef int32_t flat_items = self.flat_items
        cdef double weight_lm = self.weight_lm, tails
        cdef const SortedRule *sorted_rules = self.sorted_rules
        cdef int64_t single_offset = self.single_offset
        cdef CkyHeapEntry *batch
        cdef int32_t ahead_index
        cdef const PartialEdge *ahead_edge
        cdef const Group *ahead_group
        cdef bint have_ahead
        cdef int32_t list_lo
        if g_hi <= g_lo:
            return
        self.queue.clear()
        self.partial_edges.clear()
        self.free_edges.clear()
        self.partial_lm.clear()  # (the cache of partial edges' LM scores: per cell and round, see the docstring)
        self.n_complete = 0
        self.pending_states.clear()
        self.pending_hashes.clear()
        if self.group_cursor.size() < self.groups.size():  # (the batch below sets every cursor of g_lo:g_hi)
            self.group_cursor.resize(self.groups.size())
        # Every group's initial edge of its first rule, as _queue_initial makes it, appended in one batch (ordered
        # at once below), through raw pointers; what the group PREFETCH_GROUPS on reads is prefetched (most of
        # those reads miss the cache).
        n_groups = g_hi
        groups = self.groups.data()
        cursor = self.group_cursor.data()
        list_score = self.list_score.data()
        batch = self.queue.append_room(n_groups - g_lo)
        for g in range(g_lo, n_groups):
            if g + PREFETCH_GROUPS < n_groups:
                ahead = &groups[g + PREFETCH_GROUPS]
                cky_prefetch(&list_score[ahead.left_lo])
                cky_prefetch(&list_score[ahead.right_lo])
                if ahead.kind == GROUP_RULES:
                    cky_prefetch(&sorted_rules[(single_offset if ahead.single else 0) + ahead.rules_lo])
            group = &groups[g]
            tails = (list_score[group.left_lo] if group.n_left > 0 else 0.0) + \
                (list_score[group.right_lo] if group.n_right > 0 else 0.0)
            cursor[g].tails = tails
            cursor[g].rank = 0
            if group.n_rules <= 0:
                continue
            lm = 0.0
            if group.kind == GROUP_RULES:
                sorted_rule = &sorted_rules[(single_offset if group.single else 0) + group.rules_lo]
                score = tails + sorted_rule.score
                if not isnan(sorted_rule.estimate):
                    lm = sorted_rule.estimate
            else:
                sorted_rule = NULL
                score = tails + group.fixed_score
            entry.score = score + weight_lm * lm
            if self._keyed_at_corner(sorted_rule):
                entry.score = self._corner_key(g, 0)
                groups = self.groups.data()
            entry.index = ~g
            batch[n_initial] = entry
            n_initial += 1
        self.queue.set_size(self.queue.size() + n_initial)
        self.initial_edges += n_initial
        self.partial_pushes += n_initial
        cky_queue_make(self.queue)
        have_ahead = False
        while (have_next or self.queue.size() > 0) and (limit <= 0 or pops < limit):
            if have_ahead and not have_next and self.queue[0].index == ahead_index:
                # The last pop's look-ahead is the next pop: what its split reads next, now that the lines
                # requested mid-pop are in, while the queue pops: a group's tries' roots, or the children
                # the split of an edge's tails reads (the best one and the next).
                # A tail without a trie yet: its best item's record, which _new_trie reads. An edge's rule's LM
                # target (from its record, requested mid-pop) and its tails' partial states, which its split's
                # partial LM score reads on a cache miss (the split tail's child's own states cannot be known yet).
                if ahead_index < 0:
                    ahead_group = self.groups.data() + ~ahead_index
                    for t in range(2):
                        list_lo = ahead_group.left_lo if t == 0 else ahead_group.right_lo
                        if (ahead_group.n_left if t == 0 else ahead_group.n_right) > 0 and \
                                <size_t>list_lo < self.trie_of_list.size():
                            if self.trie_of_list[list_lo] >= 0:
                                cky_prefetch(self.nodes.data() + self.trie_of_list[list_lo])
                            elif self.item_lists[list_lo] >= 0:
                                cky_prefetch(self.items.data() + self.item_lists[list_lo])
                else:
                    ahead_edge = self.partial_edges.data() + ahead_index
                    for t in range(2):
                        node = ahead_edge.node[t]
                        if node >= 0 and not ahead_edge.flat[t] and self.nodes[node].n_children > 0:
                            child = self.nodes[node].first_child + ahead_edge.first[t]
                            cky_prefetch(self.nodes.data() + child)
                            cky_prefetch(self.nodes.data() + child + 1)
                        if node >= 0 and self.nodes[node].state_offset >= 0:
                            cky_prefetch(self.node_states.data() + self.nodes[node].state_offset)
                    ahead_group = self.groups.data() + ahead_edge.group
                    if ahead_group.kind == GROUP_RULES and ahead_edge.scores_lm:
                        sorted_rule = self._sorted_rule(ahead_group, ahead_edge.rule_rank)
                        if sorted_rule.target_length > 0:
                            cky_prefetch(&self.rule_target_lm[sorted_rule.target_lo])
            if have_next:  # the last split's best child, at least as good as the queue's best
                edge = next_edge
                have_next = False
            else:
                top = cky_queue_pop(self.queue)
                if top.index < 0:  # a group's initial edge
                    self._initial_edge(~top.index, &edge)
                else:
                    edge = self.partial_edges[top.index]
                    self.free_edges.push_back(top.index)
            self.partial_pops += 1
            # What the queue's best entry reads first, requested now (_request_ahead); the tails' trie nodes
            # (or the group's tries and rule) once that line is in.
            have_ahead = self._request_ahead(&ahead_index)
            for t in range(2):  # (an edge is scored over its tails' partial states or split only once popped)
                node = edge.node[t]
                if node >= 0 and self.nodes[node].n_children < 0:
                    self._grow_trie(node, self.nodes[node].first_child, self.nodes[node].n_items)
            if edge.initial:
                self._queue_initial(edge.group, edge.rule_rank + 1)
                if edge.scores_lm and edge.estimated:
                    self._set_rule(&edge)
            if have_ahead and ahead_index >= 0:  # (no edge stored since: the slot holds it)
                ahead_edge = self.partial_edges.data() + ahead_index
                for t in range(2):
                    if ahead_edge.node[t] >= 0:
                        cky_prefetch(self.nodes.data() + ahead_edge.node[t])
                ahead_group = self.groups.data() + ahead_edge.group
                if ahead_group.kind == GROUP_RULES:  # (its split's partial LM score reads the record)
                    cky_prefetch(self._sorted_rule(ahead_group, ahead_edge.rule_rank))
            elif have_ahead:
                ahead_group = self.groups.data() + ~ahead_index
                if ahead_group.kind == GROUP_RULES:  # its rule's record, and the next rule's (_queue_initial)
                    sorted_rule = self._sorted_rule(ahead_group, self.group_cursor[~ahead_index].rank)
                    cky_prefetch(sorted_rule)
                    cky_prefetch(sorted_rule + 1)
                if ahead_group.n_left > 0 and <size_t>ahead_group.left_lo < self.trie_of_list.size():
                    cky_prefetch(self.trie_of_list.data() + ahead_group.left_lo)
                    cky_prefetch(self.item_lists.data() + ahead_group.left_lo)
                if ahead_group.n_right > 0 and <size_t>ahead_group.right_lo < self.trie_of_list.size():
                    cky_prefetch(self.trie_of_list.data() + ahead_group.right_lo)
                    cky_prefetch(self.item_lists.data() + ahead_group.right_lo)
            # The most general open tail: fewest boundary words revealed (ties: the left one); a flat tail
            # (whose words left to reveal cannot change the score) last, and a small one (flat_items) too.
            split = -1
            for t in range(2):
                node = edge.node[t]
                if node >= 0 and self.nodes[node].rank < 0:
                    depth = 0x7FFF if edge.flat[t] or self.nodes[node].n_items <= flat_items else \
                        self.nodes[node].depth
                    if split < 0 or depth < split_depth:
                        split = t
                        split_depth = depth
            if split < 0:
                if edge.estimated:  # an initial edge over items (or no tails), queued by its words' estimate
                    edge.estimated = 0
                    edge.initial = 0
                    self._score_partial(&edge)
                    if self.queue.size() > 0 and edge.score < self.queue[0].score:
                        cky_queue_push(self.queue, edge.score, self._store_edge(&edge))
                        self.partial_pushes += 1
                        continue
                self.pending_states.clear()
                self.pending_hashes.clear()
                if edge.complete >= 0:
                    self._complete_hypothesis(&edge, &hyp)
                else:  # no LM (a carrying rule) or a lone-item initial edge scored so
                    self._evaluate(edge.group,  edge.rule_rank,
                                   self.nodes[edge.node[0]].rank if edge.node[0] >= 0 else 0,
                                   self.nodes[edge.node[1]].rank if edge.node[1] >= 0 else 0, &hyp)
                if self._take_pop(c, round, &edge, &hyp, &pops, &lowest_pop):
                    break
                continue
            node = edge.node[split]
            if not edge.flat[split] and edge.first[split] == 0 and \
                    ((self.nodes[node].below & edge.relevant[split]) == 0 or self.nodes[node].n_items <= flat_items):
                # Nothing left to reveal below the node can change the edge's LM score: its items one by one,
                # best first, instead of down the trie (the same edges, fewer pops). Under flat_items also a
                # small node whose items' words do change it: the edges over its items keep the node's
                # estimate until scored (when complete, or when the other tail is split).
                self._flatten(node)
                edge.flat[split] = 1
                self.flat_tails += 1
            if edge.flat[split]:
                child = self.flat_leaves[self.nodes[node].flat_lo + edge.first[split]]
                n_alternatives = self.nodes[node].n_items
                if edge.first[split] + 1 < n_alternatives:
                    # The next item's leaf and state, which the rest's pop reads (often soon): misses otherwise.
                    next_leaf = self.flat_leaves[self.nodes[node].flat_lo + edge.first[split] + 1]
                    cky_prefetch(self.nodes.data() + next_leaf)
                    next_state = self.states.data() + self.nodes[next_leaf].item_state_offset
                    cky_prefetch(next_state)
                    cky_prefetch(<const char *>next_state + 64)
            else:
                child = self.nodes[node].first_child + edge.first[split]
                n_alternatives = self.nodes[node].n_children
            # The best child: the tail's score, so the edge's score unless its LM estimate changes.
            next_edge = edge
            next_edge.initial = 0
            next_edge.estimated = 0
            next_edge.node[split] = child
            next_edge.first[split] = 0
            next_edge.flat[split] = 0
            other = edge.node[1 - split]
            if edge.estimated or not (edge.flat[split] or (self.nodes[child].reveals & edge.relevant[split]) == 0) \
                    or not (self.nodes[child].rank < 0 or (other >= 0 and self.nodes[other].rank < 0)):
                # (Else not complete, and the child reveals no word the LM score sees, or is an item of a
                # small flat tail (flat_items): the same LM estimate.)
                self._score_partial(&next_edge)
            if edge.first[split] + 1 < n_alternatives:
                # The rest of the node's children (items) reveal what the node does: the same LM estimate.
                refined = edge
                refined.initial = 0
                refined.first[split] = edge.first[split] + 1
                refined.score = edge.score - self._tail_score(node, edge.first[split], edge.flat[split]) \
                    + self._tail_score(node, refined.first[split], edge.flat[split])
                cky_queue_push(self.queue, refined.score, self._store_edge(&refined))
                self.partial_pushes += 1
            self.partial_pushes += 1
            if self.queue.size() == 0 or next_edge.score >= self.queue[0].score:
                if next_edge.complete < 0:
                    have_next = True  # the best edge: popped next, not through the queue
                else:  # complete: its pop, here (what the next turn of the loop would do with it)
                    self.partial_pops += 1
                    self.pending_states.clear()
                    self.pending_hashes.clear()
                    self._complete_hypothesis(&next_edge, &hyp)
                    if self._take_pop(c, round, &next_edge, &hyp, &pops, &lowest_pop):
                        break
                    have_ahead = self._request_ahead(&ahead_index)
            else:
                cky_queue_push(self.queue, next_edge.score, self._store_edge(&next_edge))
        if self.trace:
            self.trace_rows.push_back(c)
            self.trace_rows.push_back(round)
            self.trace_rows.push_back(limit)
            self.trace_rows.push_back(pops)
            self.trace_rows.push_back(<int32_t>self.items.size() - items_before)
            self.trace_rows.push_back(self.partial_pops - partial_before)
            self.trace_rows.push_back(lowest_pop)
            self.trace_rows.push_back(next_edge.score if have_next else
                                      (self.queue[0].score if self.queue.size() > 0 else -INFINITY))
            self.trace_rows.push_back(g_hi - g_lo)
        self.queue.clear()
