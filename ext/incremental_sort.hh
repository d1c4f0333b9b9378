// The stable sort the incremental search's trie building needs (decoder._ext._incremental):
// a vertex's items, best first, grouped by one boundary token without losing their order; and
// its queue: a 4-ary max-heap of chart_containers.hh's CkyHeapEntry (made from a batch at once).
#ifndef CKY_INCREMENTAL_SORT_HH
#define CKY_INCREMENTAL_SORT_HH

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "chart_containers.hh"

/* Reorder ids[0:n] (and keys) by key, keeping the order of equal keys. */
static inline void cky_stable_sort_by_key(uint64_t *keys, int32_t *ids, size_t n) {
    if (n <= 24) {  /* most nodes have few items: insertion sort, in place, no allocation */
        for (size_t i = 1; i < n; ++i) {
            const uint64_t key = keys[i];
            const int32_t id = ids[i];
            size_t j = i;
            for (; j > 0 && keys[j - 1] > key; --j) { keys[j] = keys[j - 1]; ids[j] = ids[j - 1]; }
            keys[j] = key;
            ids[j] = id;
        }
        return;
    }
    std::vector<std::pair<uint64_t, int32_t> > pairs(n);
    for (size_t i = 0; i < n; ++i) pairs[i] = std::make_pair(keys[i], ids[i]);
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const std::pair<uint64_t, int32_t> &a, const std::pair<uint64_t, int32_t> &b) {
                         return a.first < b.first; });
    for (size_t i = 0; i < n; ++i) { keys[i] = pairs[i].first; ids[i] = pairs[i].second; }
}

/* The incremental search's queue: a 4-ary max-heap of CkyHeapEntry by score (half the levels of a
   binary heap, and a node's four children in one cache line: most of its work is pops). */
static inline void cky_queue_sift_down(std::vector<CkyHeapEntry> &heap, size_t hole, const CkyHeapEntry value) {
    const size_t n = heap.size();
    CkyHeapEntry *h = heap.data();
    for (;;) {
        const size_t first = 4 * hole + 1;
        if (first >= n) break;
        size_t best = first;
        const size_t end = first + 4 < n ? first + 4 : n;
        for (size_t c = first + 1; c < end; ++c)
            if (h[best].score < h[c].score) best = c;
        if (!(value.score < h[best].score)) break;
        h[hole] = h[best];
        hole = best;
    }
    h[hole] = value;
}

/* Order entries appended without ordering into the queue's heap. */
static inline void cky_queue_make(std::vector<CkyHeapEntry> &heap) {
    const size_t n = heap.size();
    if (n < 2) return;
    for (size_t i = (n - 2) / 4 + 1; i-- > 0;) cky_queue_sift_down(heap, i, heap[i]);
}

static inline void cky_queue_push(std::vector<CkyHeapEntry> &heap, double score, int32_t index) {
    heap.push_back(CkyHeapEntry{score, index});
    CkyHeapEntry *h = heap.data();
    size_t hole = heap.size() - 1;
    const CkyHeapEntry value = h[hole];
    while (hole > 0) {
        const size_t parent = (hole - 1) / 4;
        if (!(h[parent].score < value.score)) break;
        h[hole] = h[parent];
        hole = parent;
    }
    h[hole] = value;
}

/* Remove and return the best entry (the queue is not empty). */
static inline CkyHeapEntry cky_queue_pop(std::vector<CkyHeapEntry> &heap) {
    const CkyHeapEntry top = heap[0];
    const CkyHeapEntry last = heap.back();
    heap.pop_back();
    if (!heap.empty()) cky_queue_sift_down(heap, 0, last);
    return top;
}

#endif
