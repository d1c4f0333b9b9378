"""The unminimized LM boundary words of a target yield, for counting lm_state_minimized_recombinations
(ChartSearch with count_minimized_recombinations; no module: inline functions, cimported by _chart).
KenLM minimizes a ChartState to the words its n-grams still need, so two items can recombine although
their first or last order - 1 words differ; comparing these boundaries counts such merges."""
from libc.stdint cimport int8_t, int32_t

from decoder._ext._kenlm cimport KENLM_MAX_ORDER


# The unminimized LM boundary of a state's target yield: its first and its last min(length, order - 1)
# words (KenLM ids; first: left to right, last: left to right). Items whose ChartStates are equal
# but whose boundaries differ recombine only because KenLM minimized their states.
cdef struct BoundaryWords:
    int32_t first[KENLM_MAX_ORDER - 1]
    int32_t last[KENLM_MAX_ORDER - 1]
    int8_t n


cdef inline bint same_boundaries(const BoundaryWords *a, const BoundaryWords *b) noexcept nogil:
    cdef int u
    if a.n != b.n:
        return False
    for u in range(a.n):
        if a.first[u] != b.first[u] or a.last[u] != b.last[u]:
            return False
    return True


cdef inline void concatenate_boundaries(int k, const int32_t *target, Py_ssize_t length,
                                        const BoundaryWords *children, BoundaryWords *out) noexcept nogil:
    """The boundary (k = order - 1 words at each end) of a target side (words >= 0, child block -c - 1 < 0
    as in score_target) whose child blocks have the boundaries `children`."""
    cdef int n = 0, m = 0, u
    cdef Py_ssize_t t
    cdef const BoundaryWords *child
    cdef int32_t reversed_last[KENLM_MAX_ORDER - 1]
    for t in range(length):
        if n >= k:
            break
        if target[t] >= 0:
            out.first[n] = target[t]
            n += 1
        else:
            child = &children[-target[t] - 1]
            u = 0
            while u < child.n and n < k:
                out.first[n] = child.first[u]
                n += 1
                u += 1
    t = length - 1
    while t >= 0 and m < k:
        if target[t] >= 0:
            reversed_last[m] = target[t]
            m += 1
        else:
            child = &children[-target[t] - 1]
            u = child.n - 1
            while u >= 0 and m < k:
                reversed_last[m] = child.last[u]
                m += 1
                u -= 1
        t -= 1
    for u in range(m):
        out.last[u] = reversed_last[m - 1 - u]
    out.n = <int8_t>n
