// The stable sort the incremental search's trie building needs (decoder._ext._incremental):
// a vertex's items, best first, grouped by one boundary token without losing their order; and
// the making of its queue (chart_containers.hh's max-heap) from a batch of entries at once.
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

/* Make a max-heap of entries pushed without ordering (as cky_heap_push's heap). */
static inline void cky_heap_make(std::vector<CkyHeapEntry> &heap) {
    std::make_heap(heap.begin(), heap.end());
}

#endif
