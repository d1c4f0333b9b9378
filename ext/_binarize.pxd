# Compiled kernels of decoder.binarize (iterative cost reduction).
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef int64_t cky_cheapest(int n, const int32_t* span_bucket, const int64_t* counts,
                          int64_t* best, int32_t* split_at, int32_t* codes_out) noexcept nogil
