"""Lazy k-best over the exported chart, compiled: Huang and Chiang (2005), Algorithm 3.

`KBest(rule_carries, rule_target_offsets, rule_target)` holds the store's rule
target sides; `KBest.extract(chart, roots, root_extra, pass_through_words, k,
unique, limit)` returns the k best derivations of one sentence's chart
(ChartSearch.export) as (scores, root indices, pre-order edge lists).

A derivation of item v is (score, edge, ranks): the edge into v and, per tail,
the rank of the tail's derivation it uses. Each item keeps its derivations found
so far (best first) and a heap of candidates; the k-th derivation of v is found
by pushing the successors of v's last derivation (one tail's rank raised) and
popping the best (Algorithm 3's LazyKthBest and LazyNext). The root is virtual:
its edges are the GOAL items over the sentence, each with its sentence-boundary
LM score (`root_extra`).

It is the twin of the Python reference decoder.search.kbest.ReferenceLazyKBest, step for
step: the same heap order (best score, then smaller edge, then smaller ranks),
the same arithmetic for scores and the same moment an item is first expanded (a
tail not yet expanded scores with its chart score), so both give the same
derivations in the same order, ties included. Unlike the reference it does not
recurse per tree level: the recursion of LazyKthBest through the tails is an
explicit stack of FillFrames, and the walks over a derivation use stacks too.

Unique k-best: a derivation whose output was seen before is skipped. Outputs are
word-id sequences (the store's target-vocabulary ids; a pass-through word gets
the id its caller gives it, `pass_through_words`), compared by length and two
61-bit polynomial hashes (kbest_containers.hh). The hashes of a derivation's
target blocks are computed once, from its tails' (h(a b) = h(a) B^|b| + h(b)),
so a new derivation costs only its parts not seen in an earlier one. At most
`limit` derivations are examined.
"""
import numpy as np

from decoder.errors import MemoryBudgetError

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._chart cimport (CKY_SEARCH_NO_MEMORY, CKY_SEARCH_OK, EDGE_GLUE_CONCAT, EDGE_GLUE_START, EDGE_OOV,
                                  cky_guarded, cky_search_begin, cky_search_end)

# About the bytes a triple takes in KBestTripleSet `seen` (28-byte slots, the table a quarter to half full).
cdef size_t KBEST_SEEN_BYTES = 84

cdef enum:
    FILL_START = 0   # expand the item if new; done if it has k derivations; else push successors
    FILL_NEXT = 1    # push the successor that raises tail `tail`'s rank (or pop the best when all tried)
    FILL_SCORE = 2   # that tail's next derivation is known (or not): score the successor


cdef class KBest:
    """The compiled lazy k-best over one grammar store's rules."""

    def __init__(self, rule_carries, rule_target_offsets, rule_target):
        self.rule_carries = np.ascontiguousarray(rule_carries, dtype=np.uint8)
        self.rule_target_offsets = np.ascontiguousarray(rule_target_offsets, dtype=np.int64)
        self.rule_target = np.ascontiguousarray(rule_target, dtype=np.int32)

    def extract(self, dict chart, roots, root_extra, pass_through_words, int64_t k, bint unique, int64_t limit,
                long long memory_budget_mb=0, size_t memory_held=0):
        """The k best derivations of the chart (unique: of distinct outputs), among the `limit` best, in at
        most memory_budget_mb MB with the memory_held bytes the caller holds for the sentence already (its
        chart search's; 0 MB: no limit; else MemoryBudgetError).

        chart: ChartSearch.export(); roots: the GOAL items over the sentence; root_extra: what
        each root adds to its score (the weighted sentence-boundary LM score); pass_through_words:
        int32 per source position, the output word id of its pass-through (a word the target
        vocabulary has: its id there; else an id above the vocabulary's, one per distinct word).
        Returns (scores float64[m], root indices int32[m], offsets int64[m + 1], edges int32[...]):
        derivation d is edges[offsets[d]:offsets[d + 1]], its edges in pre-order (an edge, then the
        derivations of its tails in order)."""
        self.item_score = np.ascontiguousarray(chart["item_score"], dtype=np.float64)
        self.item_first_edge = np.ascontiguousarray(chart["item_first_edge"], dtype=np.int32)
        self.edge_next = np.ascontiguousarray(chart["edge_next"], dtype=np.int32)
        self.edge_rule = np.ascontiguousarray(chart["edge_rule"], dtype=np.int32)
        self.edge_tail0 = np.ascontiguousarray(chart["edge_tail0"], dtype=np.int32)
        self.edge_tail1 = np.ascontiguousarray(chart["edge_tail1"], dtype=np.int32)
        self.edge_score = np.ascontiguousarray(chart["edge_score"], dtype=np.float64)
        self.roots = np.ascontiguousarray(roots, dtype=np.int32)
        self.root_extra = np.ascontiguousarray(root_extra, dtype=np.float64)
        self.pass_through_words = np.ascontiguousarray(pass_through_words, dtype=np.int32)
        if self.roots.shape[0] != self.root_extra.shape[0]:
            raise ValueError(f"{self.roots.shape[0]} roots but {self.root_extra.shape[0]} root scores")
        if self.item_first_edge.shape[0] != self.item_score.shape[0]:
            raise ValueError("the chart's item arrays differ in length")
        cdef int status
        self.memory_budget = <size_t>memory_budget_mb << 20
        self.memory_held = memory_held
        cky_search_begin()  # a std::bad_alloc in the nogil steps is their status (search_errors.hh)
        try:
            with nogil:
                status = cky_guarded(self._start())
                if status == CKY_SEARCH_OK and self.start_bad < 0 and k > 0 and limit > 0 and self.roots.shape[0] > 0:
                    status = cky_guarded(self._search(k, unique, limit))
        finally:
            cky_search_end()
        if status != CKY_SEARCH_OK:
            self._release_memory()
            if status == CKY_SEARCH_NO_MEMORY:
                raise MemoryError(f"the k-best search ran out of memory (std::bad_alloc): ask for fewer "
                                  f"derivations, or set memory_budget_mb below the memory available")
            raise RuntimeError("the k-best search failed with a C++ exception")
        if self.start_bad >= 0:
            raise ValueError(f"chart item {self.start_bad} has a tail that is not an earlier item (not a chart of "
                             f"ChartSearch.export?)")
        if self.over_budget:
            found, used = self.found_scores.size(), (self.memory_held + self._memory_bytes()) / 2**20
            self._release_memory()
            raise MemoryBudgetError(f"the k-best search went over memory_budget_mb = {memory_budget_mb} ({used:,.0f} MB "
                                    f"with the sentence's chart, after {found:,} of the {k:,} derivations asked for): "
                                    f"ask for fewer, or raise memory_budget_mb")
        m = self.found_scores.size()
        scores = np.empty(m, np.float64)
        root_index = np.empty(m, np.int32)
        offsets = np.empty(m + 1, np.int64)
        edges = np.empty(self.found_edges.size(), np.int32)
        cdef double[::1] s_view = scores
        cdef int32_t[::1] r_view = root_index, e_view = edges
        cdef int64_t[::1] o_view = offsets
        cdef size_t t
        for t in range(m):
            s_view[t] = self.found_scores[t]
            r_view[t] = self.found_roots[t]
        for t in range(m + 1):
            o_view[t] = self.found_offsets[t]
        for t in range(self.found_edges.size()):
            e_view[t] = self.found_edges[t]
        return scores, root_index, offsets, edges

    # ------------------------------------------------------------------ per sentence

    cdef void _release_memory(self):
        """After a failed search: its state emptied and the memory it held given back."""
        cdef vector[vector[KBestDerivation]] empty
        self.derivations.swap(empty)
        self.candidates.clear()
        self.candidates.shrink_to_fit()
        self.seen.clear()
        self.block_hashes.clear()
        self.block_hashes.shrink_to_fit()
        self.found_edges.clear()
        self.found_edges.shrink_to_fit()
        self.found_scores.clear()
        self.found_roots.clear()
        self.found_offsets.clear()
        self.found_offsets.push_back(0)

    cdef size_t _memory_bytes(self) noexcept nogil:
        """About the bytes this search holds (memory_budget_mb): per item its lists, and per candidate ever
        pushed its place in a heap, then in a derivation list, and its triple in `seen`."""
        return (self.n_blocks.size() * (sizeof(int32_t) + sizeof(uint8_t) + 2 * sizeof(vector[KBestDerivation]))
                + self.entries * (2 * sizeof(KBestDerivation) + KBEST_SEEN_BYTES)
                + self.block_hashes.size() * sizeof(KBestBlockHash)
                + (self.found_edges.size() + self.walk_stack.size()) * sizeof(int32_t)
                + self.fill_stack.size() * sizeof(FillFrame)
                + self.found_scores.size() * (sizeof(double) + sizeof(int32_t) + sizeof(int64_t)))

    cdef int _start(self) noexcept nogil:
        """Reset the state; count the blocks each item carries (all its edges agree: recombined
        items share their LM states, one per block). start_bad: -1, or an item whose tail is not older."""
        cdef Py_ssize_t n_items = self.item_score.shape[0]
        cdef int32_t item, edge, rule, u, n, blocks
        cdef int32_t tails[2]
        self.start_bad = -1
        self.entries = 0
        self.over_budget = False
        self.n_blocks.assign(n_items, 1)
        self.initialized.assign(n_items, 0)
        self.derivations.clear()
        self.derivations.resize(n_items)
        self.candidates.clear()
        self.candidates.resize(n_items)
        self.seen.clear()
        self.root_derivations.clear()
        self.root_candidates.clear()
        self.outputs_seen.clear()
        self.block_hashes.clear()
        self.found_scores.clear()
        self.found_roots.clear()
        self.found_offsets.clear()
        self.found_offsets.push_back(0)
        self.found_edges.clear()
        for item in range(n_items):
            edge = self.item_first_edge[item]
            while edge >= 0:  # the hypergraph is acyclic because every tail is an older item
                n = self._tails(edge, tails)
                for u in range(n):
                    if tails[u] >= item:
                        self.start_bad = item
                        return 0
                edge = self.edge_next[edge]
            edge = self.item_first_edge[item]
            if edge < 0:
                continue
            rule = self.edge_rule[edge]
            if rule == EDGE_GLUE_START or (rule >= 0 and self.rule_carries[rule]):
                n = self._tails(edge, tails)
                blocks = 0
                for u in range(n):
                    blocks += self.n_blocks[tails[u]]
                self.n_blocks[item] = blocks
        return 0

    cdef int _tails(self, int32_t edge, int32_t *tails) noexcept nogil:
        """The items an edge combines, in order (none for a pass-through word); returns how many."""
        cdef int n = 0
        if self.edge_rule[edge] == EDGE_OOV:
            return 0
        if self.edge_tail0[edge] >= 0:
            tails[n] = self.edge_tail0[edge]
            n += 1
        if self.edge_tail1[edge] >= 0:
            tails[n] = self.edge_tail1[edge]
            n += 1
        return n

    # ------------------------------------------------------------------ Algorithm 3

    cdef void _init(self, int32_t item) noexcept nogil:
        """The item's candidates: each incoming edge with the best derivation of every tail."""
        cdef vector[KBestDerivation] *heap = &self.candidates[item]
        cdef KBestDerivation d
        cdef int32_t tails[2]
        cdef int n, u
        cdef double total
        cdef int32_t edge = self.item_first_edge[item]
        while edge >= 0:
            n = self._tails(edge, tails)
            total = 0.0
            for u in range(n):
                total += self.item_score[tails[u]]
            d.score = self.edge_score[edge] + total
            d.edge = edge
            d.rank0 = 0
            d.rank1 = 0
            d.blocks = -1
            heap.push_back(d)
            edge = self.edge_next[edge]
        self.entries += heap.size()
        kbest_heapify(heap[0])
        self.initialized[item] = 1

    cdef bint _known_score(self, int32_t item, int32_t rank, double *score) noexcept nogil:
        """The score of the item's derivation `rank` if already known (rank 0 of an item not yet
        expanded: its chart score); False if it is not (or does not exist)."""
        if rank == 0 and not self.initialized[item]:
            score[0] = self.item_score[item]
            return True
        if <size_t>rank < self.derivations[item].size():
            score[0] = self.derivations[item][rank].score
            return True
        return False

    cdef void _fill(self, int32_t item, int32_t k) noexcept nogil:
        """Give the item its k best derivations (fewer if it has fewer): LazyKthBest, iteratively."""
        cdef FillFrame frame
        cdef FillFrame *f
        cdef KBestDerivation d
        cdef int32_t tails[2]
        cdef int32_t rank0, rank1, tail_item, need
        cdef int n, u
        cdef double total, part
        cdef bint known
        if self.initialized[item] and self.derivations[item].size() >= <size_t>k:
            return
        frame.item = item
        frame.k = k
        frame.phase = FILL_START
        self.fill_stack.push_back(frame)
        while self.fill_stack.size() > 0:
            f = &self.fill_stack.back()
            item = f.item
            if f.phase == FILL_START:
                if not self.initialized[item]:
                    self._init(item)
                if self.derivations[item].size() >= <size_t>f.k:
                    self.fill_stack.pop_back()
                elif self.derivations[item].size() == 0:
                    if self.candidates[item].size() == 0:
                        self.fill_stack.pop_back()
                    else:
                        self.derivations[item].push_back(kbest_heap_pop(self.candidates[item]))
                else:
                    d = self.derivations[item].back()
                    f.edge = d.edge
                    f.rank0 = d.rank0
                    f.rank1 = d.rank1
                    f.tail = 0
                    f.phase = FILL_NEXT
                continue
            n = self._tails(f.edge, tails)
            rank0 = f.rank0 + (1 if f.tail == 0 else 0)
            rank1 = f.rank1 + (1 if f.tail == 1 else 0)
            if f.phase == FILL_NEXT:
                if f.tail >= n:  # every successor tried: the next derivation is the best candidate
                    if self.candidates[item].size() == 0:
                        self.fill_stack.pop_back()
                    else:
                        self.derivations[item].push_back(kbest_heap_pop(self.candidates[item]))
                        f.phase = FILL_START
                    continue
                if self.seen.contains(f.edge, rank0, rank1):
                    f.tail += 1
                    continue
                f.phase = FILL_SCORE
                tail_item = tails[f.tail]
                need = (rank0 if f.tail == 0 else rank1) + 1
                if not (self.initialized[tail_item] and self.derivations[tail_item].size() >= <size_t>need):
                    frame.item = tail_item
                    frame.k = need
                    frame.phase = FILL_START
                    self.fill_stack.push_back(frame)  # f is stale from here
                continue
            # FILL_SCORE: every tail's derivation is known now, or the raised one does not exist
            total = 0.0
            known = True
            for u in range(n):
                if not self._known_score(tails[u], rank0 if u == 0 else rank1, &part):
                    known = False
                    break
                total += part
            if known:
                self.seen.insert(f.edge, rank0, rank1)
                d.score = self.edge_score[f.edge] + total
                d.edge = f.edge
                d.rank0 = rank0
                d.rank1 = rank1
                d.blocks = -1
                kbest_heap_push(self.candidates[item], d)
                self.entries += 1
            f.tail += 1
            f.phase = FILL_NEXT

    cdef KBestDerivation *_derivation(self, int32_t item, int32_t rank) noexcept nogil:
        """The item's derivation `rank` (which exists: a parent derivation uses it)."""
        self._fill(item, rank + 1)
        return &self.derivations[item][rank]

    cdef bint _kth_root(self, int64_t k) noexcept nogil:
        """Make root_derivations[k] (the k-th best derivation of the sentence); False if none."""
        cdef KBestDerivation d
        cdef double score
        cdef int32_t t
        if self.root_derivations.size() == 0 and self.root_candidates.size() == 0:
            for t in range(self.roots.shape[0]):
                d.score = self.item_score[self.roots[t]] + self.root_extra[t]
                d.edge = t
                d.rank0 = 0
                d.rank1 = 0
                d.blocks = -1
                self.root_candidates.push_back(d)
            kbest_heapify(self.root_candidates)
        while self.root_derivations.size() <= <size_t>k:
            if self.root_derivations.size() > 0:
                d = self.root_derivations.back()
                self._fill(self.roots[d.edge], d.rank0 + 2)
                if self._known_score(self.roots[d.edge], d.rank0 + 1, &score):
                    d.score = score + self.root_extra[d.edge]
                    d.rank0 += 1
                    kbest_heap_push(self.root_candidates, d)
            if self.root_candidates.size() == 0:
                return False
            self.root_derivations.push_back(kbest_heap_pop(self.root_candidates))
        return True

    # ------------------------------------------------------------------ walks over one derivation

    cdef KBestBlockHash _tail_block(self, const KBestDerivation *d, int32_t block) noexcept nogil:
        """The hash of block `block` of the blocks d's tails carry (numbered over the tails in order;
        each tail's hashes are known)."""
        cdef int32_t tails[2]
        cdef int n = self._tails(d.edge, tails)
        cdef KBestBlockHash empty
        if n == 0:  # cannot happen in a chart of the search: an empty block
            empty.h1 = 0
            empty.h2 = 0
            empty.length = 0
            return empty
        if n == 1 or block < self.n_blocks[tails[0]]:
            return self.block_hashes[self.derivations[tails[0]][d.rank0].blocks + block]
        return self.block_hashes[self.derivations[tails[1]][d.rank1].blocks + block - self.n_blocks[tails[0]]]

    cdef int32_t _hash_blocks(self, const KBestDerivation *d) noexcept nogil:
        """Hash d's output blocks from its tails' (known) as readback assembles them: a rule writes
        its target with block references filled by its tails' blocks, a carrying rule and glue
        start pass their tails' blocks on, glue concatenation joins blocks 0 and 1, a pass-through
        writes its word. Returns where in block_hashes they are."""
        cdef int32_t offset = self.block_hashes.size()
        cdef int32_t rule = self.edge_rule[d.edge]
        cdef int32_t tails[2]
        cdef int32_t b, n_carried = 0, word
        cdef int64_t t
        cdef int n, u
        cdef KBestBlockHash h
        h.h1 = 0
        h.h2 = 0
        h.length = 0
        if rule == EDGE_OOV:
            kbest_append_word(h, self.pass_through_words[self.edge_tail0[d.edge]])
        elif rule == EDGE_GLUE_CONCAT:
            kbest_append_block(h, self._tail_block(d, 0), self.powers)
            kbest_append_block(h, self._tail_block(d, 1), self.powers)
        elif rule == EDGE_GLUE_START or self.rule_carries[rule]:
            n = self._tails(d.edge, tails)
            for u in range(n):
                n_carried += self.n_blocks[tails[u]]
            for b in range(n_carried):
                self.block_hashes.push_back(self._tail_block(d, b))
            return offset
        else:
            for t in range(self.rule_target_offsets[rule], self.rule_target_offsets[rule + 1]):
                word = self.rule_target[t]
                if word >= 0:
                    kbest_append_word(h, word)
                else:
                    kbest_append_block(h, self._tail_block(d, -1 - word), self.powers)
        self.block_hashes.push_back(h)
        return offset

    cdef KBestBlockHash _output(self, int32_t item, int32_t rank) noexcept nogil:
        """The hash of the output of derivation (item, rank): its block 0, hashed bottom-up over the
        derivations not hashed before (derivations share most of their parts)."""
        cdef KBestDerivation *d
        cdef int32_t tails[2]
        cdef int32_t ranks[2]
        cdef int n, u
        cdef int32_t top = item
        cdef int32_t top_rank = rank
        self.walk_stack.clear()
        self.walk_stack.push_back(item)
        self.walk_stack.push_back(rank)
        self.walk_stack.push_back(0)
        while self.walk_stack.size() > 0:  # entries (item, rank, tails pushed)
            item = self.walk_stack[self.walk_stack.size() - 3]
            rank = self.walk_stack[self.walk_stack.size() - 2]
            d = self._derivation(item, rank)
            if d.blocks >= 0:
                self.walk_stack.resize(self.walk_stack.size() - 3)
                continue
            if self.walk_stack.back() == 0:
                self.walk_stack[self.walk_stack.size() - 1] = 1
                n = self._tails(d.edge, tails)
                ranks[0] = d.rank0
                ranks[1] = d.rank1
                for u in range(n):
                    if self._derivation(tails[u], ranks[u]).blocks < 0:
                        self.walk_stack.push_back(tails[u])
                        self.walk_stack.push_back(ranks[u])
                        self.walk_stack.push_back(0)
                continue
            self.walk_stack.resize(self.walk_stack.size() - 3)
            d.blocks = self._hash_blocks(d)
        return self.block_hashes[self._derivation(top, top_rank).blocks]

    cdef void _edges(self, int32_t item, int32_t rank) noexcept nogil:
        """Append the derivation's edges in pre-order to found_edges."""
        cdef const KBestDerivation *d
        cdef int32_t tails[2]
        cdef int32_t ranks[2]
        cdef int n
        self.walk_stack.clear()
        self.walk_stack.push_back(item)
        self.walk_stack.push_back(rank)
        while self.walk_stack.size() > 0:
            rank = self.walk_stack.back()
            self.walk_stack.pop_back()
            item = self.walk_stack.back()
            self.walk_stack.pop_back()
            d = self._derivation(item, rank)
            self.found_edges.push_back(d.edge)
            n = self._tails(d.edge, tails)
            ranks[0] = d.rank0
            ranks[1] = d.rank1
            while n > 0:  # last tail pushed first: the first tail is walked first
                n -= 1
                self.walk_stack.push_back(tails[n])
                self.walk_stack.push_back(ranks[n])

    cdef int _search(self, int64_t k, bint unique, int64_t limit) noexcept nogil:
        cdef int64_t rank, found = 0
        cdef KBestDerivation d
        cdef KBestBlockHash output
        for rank in range(limit):
            if self.memory_budget and self.memory_held + self._memory_bytes() > self.memory_budget:
                self.over_budget = True
                return 0
            if not self._kth_root(rank):
                return 0
            d = self.root_derivations[rank]
            if unique:
                output = self._output(self.roots[d.edge], d.rank0)
                if not self.outputs_seen.insert(output.h1, output.h2, <uint64_t>output.length):
                    continue
            self.found_scores.push_back(d.score)
            self.found_roots.push_back(d.edge)
            self._edges(self.roots[d.edge], d.rank0)
            self.found_offsets.push_back(self.found_edges.size())
            found += 1
            if found >= k:
                return 0
        return 0
