# Compiled kernels of decoder.binarize (iterative cost reduction, sequence interning).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector
cimport cython

cdef int64_t cky_cheapest(int n, const int32_t* span_bucket, const int64_t* counts,
                          int64_t* best, int32_t* split_at, int32_t* codes_out) noexcept nogil


@cython.final
cdef class SequenceIndex:
    cdef vector[int32_t] values  # every sequence, concatenated in id order
    cdef vector[int64_t] starts  # id -> offset in values; starts[id + 1] is its end
    cdef vector[uint64_t] hashes  # id -> hash of its values
    cdef vector[uint64_t] slots  # open-addressing table (linear probing): hash tag | id, or all ones

    cdef int find_or_add(self, const int32_t* values, int n, bint* added) except -1
    cdef uint64_t prefetch(self, const int32_t* values, int n) noexcept
    cdef int find_or_add_hashed(self, const int32_t* values, int n, uint64_t h, bint* added) except -1
    cdef void grow(self) except *
    cdef int length(self, int sequence) noexcept
    cdef const int32_t* items(self, int sequence) noexcept
