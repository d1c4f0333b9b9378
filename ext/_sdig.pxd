"""The compiled SDIG search (see _sdig.pyx): option, candidate and beam-entry structs."""
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from decoder._ext._kenlm cimport ChartState, Model
from decoder._ext._lm cimport LanguageModel

cdef extern from "sdig_containers.hh":
    cdef struct SdigScored:
        double score
        int32_t index
    void sdig_sort_best_first(SdigScored *first, size_t n) nogil

# The feature vector (decoder.sdig.search.FEATURES): its length and the two features the
# search fills in itself.
cdef enum:
    SDIG_N_FEATURES = 8
    SDIG_TRANSITION = 2
    SDIG_LM = 7

# Where a child ET goes (decoder.sdig.search._side): before its parent ET's English words
# ("L"), moved there by the order model ("l"), moved after ("r"), after ("R").
cpdef enum SdigSide:
    SIDE_LEFT = 0
    SIDE_MOVED_LEFT = 1
    SIDE_MOVED_RIGHT = 2
    SIDE_RIGHT = 3


# The English side of one ET pair (or of a pass-through word).
cdef struct SdigOption:
    int32_t word_start            # its KenLM word ids: lm_words[word_start : word_start + length]
    int32_t length
    int32_t root_word             # transition-vocabulary id of its English root word
    double score                  # weighted local features (everything but transition and lm)
    double local[SDIG_N_FEATURES]


# One combination at a node: an option plus one beam entry per attached child, without the
# transition (which depends on the parent's English root).
cdef struct SdigCandidate:
    double score
    double increment              # LM log10 increment of this combination
    int32_t option
    int32_t shape
    int32_t chosen_start          # its children's entry ids: chosen[chosen_start : + shape's children]
    int32_t state                 # index into states (with an LM), else -1


# A candidate kept in the beam of (node, parent English root), with its transition.
cdef struct SdigEntry:
    double score
    double transition
    int32_t candidate
    double features[SDIG_N_FEATURES]


cdef class CompiledSearch:
    cdef LanguageModel lm
    cdef const Model *model
    cdef double weights[SDIG_N_FEATURES]
    cdef int32_t beam
    # transitions: Witten-Bell P(child | parent) over transition-vocabulary ids
    cdef int64_t total
    cdef int64_t vocabulary
    cdef vector[int64_t] unigram
    cdef vector[int64_t] parent_total
    cdef vector[int64_t] parent_types
    cdef unordered_map[uint64_t, int64_t] pair_count
    # options (grow as sentences use them)
    cdef vector[SdigOption] options
    cdef vector[int32_t] lm_words
    # one sentence's forest
    cdef vector[int32_t] node_shape_start    # shapes of node v: [node_shape_start[v], node_shape_start[v + 1])
    cdef vector[int32_t] shape_child_start   # attached children of shape s (node ids) and their sides
    cdef vector[int32_t] children
    cdef vector[int8_t] sides
    cdef vector[int32_t] shape_option_start  # option ids of shape s
    cdef vector[int32_t] option_ids
    # one sentence's search
    cdef vector[int32_t] node_candidate_start   # candidates of node v: [start[v], end[v])
    cdef vector[int32_t] node_candidate_end
    cdef vector[SdigCandidate] candidates
    cdef vector[int32_t] chosen
    cdef vector[SdigEntry] entries
    cdef vector[ChartState] states
    cdef unordered_map[uint64_t, int64_t] memo
    cdef int64_t n_states
    cdef int64_t n_lm_calls

    cdef double transition(self, int32_t parent, int32_t child) noexcept nogil
    cdef int64_t best(self, int32_t node, int32_t parent_root) noexcept nogil
    cdef void inner(self, int32_t node) noexcept nogil
