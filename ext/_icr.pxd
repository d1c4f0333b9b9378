"""The ICR sweep's kernels (see _icr.pyx)."""
from libc.stdint cimport int32_t, int64_t

cdef enum:
    MAX_TOKENS = 64  # source tokens of a rule the sweep handles (its stack arrays are sized by it)

# Cheapest bracketing of n tokens (span_bucket: an n x n table of bucket ids, -1 infeasible; counts:
# bucket sizes); best and split_at are n x n scratch. Writes the bracketing's n - 1 span codes
# p * n + q (post-order) to codes_out; returns its cost, or -1 if no bracketing is feasible.
cdef int64_t cky_cheapest(int n, const int32_t* span_bucket, const int64_t* counts,
                          int64_t* best, int32_t* split_at, int32_t* codes_out) noexcept nogil
