# distutils: language = c++
"""Two-pass LM-driven hypergraph search, compiled (see _two_pass.pyx)."""
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._chart cimport ChartSearch, CkyHashMap, CkyHeapEntry
from decoder._ext._kenlm cimport ChartState


# One piece of alpha, what a partial item has left: a word, or block `block` of
# first-pass item `item` as instance `instance` of the derivation.
cdef struct Element:
    int32_t word          # KenLM id, or -1 for a reference
    int32_t item
    int32_t block
    int32_t instance


# [[e; alpha]]: e is the prefix's KenLM state (from <s>), alpha elements[rest_lo:rest_lo+rest_n].
cdef struct Partial:
    double score          # exact + estimate of alpha: the agenda's order
    double exact          # rule weights and weighted LM of the output so far
    double lm_exact       # its log10 LM
    ChartState prefix
    uint64_t prefix_hash
    int64_t rest_lo
    int32_t rest_n
    int32_t next_instance
    int32_t parent        # the partial item unwound to make this one (-1: the start)
    int32_t edge          # the hyperedge chosen for `instance`
    int32_t instance
    int32_t base          # tails of `edge` are instances base, base + 1
    int8_t dead           # replaced in its recombination class
    int32_t suffix_at     # alpha[suffix_at - 1] is a reference with a full left state (-1: none), so
    float suffix_lm       # alpha[suffix_at:] </s> adds suffix_lm whatever comes before: reused by children


cdef class TwoPassSearch(ChartSearch):
    cdef readonly double beam
    cdef readonly long long agenda_limit, max_pops
    cdef readonly bint reuse_suffix       # reuse the LM of alpha's unchanged tail (off: rescore all of alpha)
    cdef readonly int edge_limit          # hyperedges per item the second pass unwinds into (0: all)
    cdef readonly int second_pass_stop    # STOP_BUDGET, STOP_BOUND, STOP_FIRST
    cdef double best_complete             # best score of a complete derivation so far
    cdef public unsigned long long agenda_pops, unwindings
    cdef int32_t bos_id, eos_id
    cdef int k
    cdef double best_seen
    cdef vector[Partial] partials
    cdef vector[Element] elements
    cdef vector[Element] expansion        # scratch: one hyperedge's blocks
    cdef vector[int64_t] expansion_lo
    cdef vector[Element] new_rest         # scratch
    cdef vector[int32_t] target           # scratch: a target side for _score
    cdef vector[int32_t] seen_instances   # scratch
    cdef vector[int32_t] words_scratch    # scratch: words shifted into the output
    cdef vector[Element] carried          # scratch: the tails' blocks of one hyperedge
    cdef vector[CkyHeapEntry] item_edges  # scratch: (w^1 through the edge, edge) of one item
    cdef vector[CkyHeapEntry] agenda
    cdef CkyHashMap class_index           # recombination key -> class
    cdef vector[int32_t] class_members    # k slots per class (-1: empty)
    cdef vector[int32_t] complete
    cdef vector[int32_t] popped           # partial items in the order the agenda popped them

    cdef void _search(self, int c, int round) noexcept nogil
    cdef void _second_pass(self) noexcept nogil
    cdef int _second_pass_step(self) noexcept nogil
    cdef int32_t _unwind(self, int32_t p, bint greedy) noexcept nogil
    cdef void _expand_edge(self, int32_t e, int32_t base) noexcept nogil
    cdef void _push(self, Partial *partial) noexcept nogil
    cdef double _estimate(self, Partial *partial, const Element *rest, int32_t anchor, float suffix_lm) noexcept nogil
    cdef float _chain(self, const ChartState *first, uint64_t first_hash, const Element *rest, int32_t n, bint eos) noexcept nogil
    cdef float _extend(self, const ChartState *prefix, uint64_t prefix_hash, const int32_t *words, int32_t n, ChartState *out, uint64_t *out_hash) noexcept nogil
    cdef uint64_t _key(self, const Partial *partial) noexcept nogil
