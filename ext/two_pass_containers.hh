// Agenda helpers of the compiled two-pass search (decoder._ext._two_pass), over the
// chart search's heap entries. Declared to Cython in _two_pass.pyx.
#ifndef CKY_TWO_PASS_CONTAINERS_HH
#define CKY_TWO_PASS_CONTAINERS_HH

#include <algorithm>
#include <cstddef>
#include <vector>

#include "chart_containers.hh"

/* Best first, and at most `keep` of them (0: all): one item's hyperedges. */
static inline void two_pass_best_edges(std::vector<CkyHeapEntry> &edges, size_t keep) {
    std::sort(edges.begin(), edges.end(), [](const CkyHeapEntry &a, const CkyHeapEntry &b) {
        return b < a || (!(a < b) && a.index < b.index); });  /* ties: older edge (lower id) first */
    if (keep > 0 && edges.size() > keep) edges.resize(keep);
}

/* Keep the `keep` best entries of a max-heap (the agenda size limit). */
static inline void two_pass_trim_heap(std::vector<CkyHeapEntry> &heap, size_t keep) {
    if (heap.size() <= keep) return;
    std::nth_element(heap.begin(), heap.begin() + keep, heap.end(),
                     [](const CkyHeapEntry &a, const CkyHeapEntry &b) { return b < a; });
    heap.resize(keep);
    std::make_heap(heap.begin(), heap.end());
}

#endif
