"""SequenceIndex: distinct int32 sequences -> dense ids (see _sequence_index.pyx)."""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp.vector cimport vector
cimport cython


cdef inline uint64_t sequence_hash(const int32_t* values, int n) noexcept nogil:
    """A multiply-xorshift hash of n int32 values (their order matters)."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    cdef int i
    for i in range(n):
        h = (h ^ <uint32_t>values[i]) * 0xBF58476D1CE4E5B9ULL
        h ^= h >> 29
    return h ^ (h >> 32)



@cython.final
cdef class SequenceIndex:
    cdef vector[int32_t] values  # every sequence, concatenated in id order
    cdef vector[int64_t] starts  # id -> offset in values; starts[id + 1] is its end
    cdef vector[uint64_t] hashes  # id -> hash of its values
    cdef vector[uint64_t] slots  # open-addressing table (linear probing): hash tag | id, or all ones

    cdef int find_or_add(self, const int32_t* values, int n, bint* added) except -1
    # The hash of values[0:n] (sequence_hash), with its table slot requested from memory.
    cdef uint64_t prefetch(self, const int32_t* values, int n) noexcept
    cdef int find_or_add_hashed(self, const int32_t* values, int n, uint64_t h, bint* added) except -1
    cdef void grow(self) except *
    cdef int length(self, int sequence) noexcept
    cdef const int32_t* items(self, int sequence) noexcept
