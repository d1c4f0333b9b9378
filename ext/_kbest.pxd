"""The compiled lazy k-best over an exported chart (see _kbest.pyx)."""
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector

cdef extern from "kbest_containers.hh":
    cdef struct KBestDerivation:
        double score
        int32_t edge
        int32_t rank0
        int32_t rank1
        int32_t blocks
    void kbest_heap_push(vector[KBestDerivation] &heap, const KBestDerivation &d) nogil
    KBestDerivation kbest_heap_pop(vector[KBestDerivation] &heap) nogil
    void kbest_heapify(vector[KBestDerivation] &heap) nogil
    cdef cppclass KBestTripleSet:
        KBestTripleSet() nogil
        void clear() nogil
        bint contains(uint64_t a, uint64_t b, uint64_t c) nogil
        bint insert(uint64_t a, uint64_t b, uint64_t c) nogil
    cdef struct KBestBlockHash:
        uint64_t h1
        uint64_t h2
        int64_t length
    cdef cppclass KBestPowers:
        KBestPowers() nogil
    void kbest_append_word(KBestBlockHash &h, int32_t word) nogil
    void kbest_append_block(KBestBlockHash &h, const KBestBlockHash &block, KBestPowers &powers) nogil


# A step of the iterative _fill: "give `item` at least k derivations". The frame for
# item v pushes the successors of its last derivation (edge, rank0, rank1), tail by
# tail; raising tail t's rank may need one more derivation of that tail first (a
# frame above this one), then the candidate is scored (phase FILL_SCORE).
cdef struct FillFrame:
    int32_t item
    int32_t k
    int8_t phase
    int8_t tail
    int32_t edge
    int32_t rank0
    int32_t rank1


cdef class KBest:
    # ---- grammar (read-only arrays of the store)
    cdef const uint8_t[::1] rule_carries
    cdef const int64_t[::1] rule_target_offsets
    cdef const int32_t[::1] rule_target         # target-vocabulary ids (>= 0) and block references (< 0)

    # ---- per sentence: the exported chart (read-only)
    cdef const double[::1] item_score
    cdef const int32_t[::1] item_first_edge
    cdef const int32_t[::1] edge_next
    cdef const int32_t[::1] edge_rule
    cdef const int32_t[::1] edge_tail0
    cdef const int32_t[::1] edge_tail1
    cdef const double[::1] edge_score
    cdef const int32_t[::1] roots
    cdef const double[::1] root_extra
    cdef const int32_t[::1] pass_through_words  # per source position: the output word id of its pass-through

    # ---- per sentence: Algorithm 3's state
    cdef vector[int32_t] n_blocks               # per item: the target blocks it carries
    cdef vector[uint8_t] initialized
    cdef vector[vector[KBestDerivation]] derivations  # per item, best first
    cdef vector[vector[KBestDerivation]] candidates   # per item: a heap
    cdef KBestTripleSet seen                    # (edge, ranks) ever pushed
    cdef vector[KBestDerivation] root_derivations     # edge = root index, rank0 = its rank
    cdef vector[KBestDerivation] root_candidates
    cdef vector[FillFrame] fill_stack
    cdef vector[int32_t] walk_stack
    cdef vector[KBestBlockHash] block_hashes    # per derivation (its `blocks`): its blocks' hashes
    cdef KBestPowers powers
    cdef KBestTripleSet outputs_seen            # (hashes, length) of the outputs found

    # ---- per sentence: the results
    cdef vector[double] found_scores
    cdef vector[int32_t] found_roots
    cdef vector[int64_t] found_offsets
    cdef vector[int32_t] found_edges

    # ---- per sentence: the memory budget (extract's memory_budget_mb in bytes; 0: none) and what is counted
    cdef size_t memory_budget
    cdef size_t memory_held                     # bytes the sentence's chart search holds, counted against it
    cdef size_t entries                         # candidates ever pushed (each then in a heap or a list)
    cdef bint over_budget
    cdef int32_t start_bad                      # _start: -1, or an item whose tail is not older

    cdef void _release_memory(self)
    cdef size_t _memory_bytes(self) noexcept nogil
    cdef int _start(self) noexcept nogil
    cdef int _tails(self, int32_t edge, int32_t *tails) noexcept nogil
    cdef void _init(self, int32_t item) noexcept nogil
    cdef bint _known_score(self, int32_t item, int32_t rank, double *score) noexcept nogil
    cdef void _fill(self, int32_t item, int32_t k) noexcept nogil
    cdef KBestDerivation *_derivation(self, int32_t item, int32_t rank) noexcept nogil
    cdef bint _kth_root(self, int64_t k) noexcept nogil
    cdef KBestBlockHash _tail_block(self, const KBestDerivation *d, int32_t block) noexcept nogil
    cdef int32_t _hash_blocks(self, const KBestDerivation *d) noexcept nogil
    cdef KBestBlockHash _output(self, int32_t item, int32_t rank) noexcept nogil
    cdef void _edges(self, int32_t item, int32_t rank) noexcept nogil
    cdef int _search(self, int64_t k, bint unique, int64_t limit) noexcept nogil
