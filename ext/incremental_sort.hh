// The stable sort the incremental search's trie building needs (decoder._ext._incremental):
// a vertex's items, best first, grouped by one boundary token without losing their order.
#ifndef CKY_INCREMENTAL_SORT_HH
#define CKY_INCREMENTAL_SORT_HH

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

/* Reorder ids[0:n] (and keys) by key, keeping the order of equal keys. */
static inline void cky_stable_sort_by_key(uint64_t *keys, int32_t *ids, size_t n) {
    std::vector<std::pair<uint64_t, int32_t> > pairs(n);
    for (size_t i = 0; i < n; ++i) pairs[i] = std::make_pair(keys[i], ids[i]);
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const std::pair<uint64_t, int32_t> &a, const std::pair<uint64_t, int32_t> &b) {
                         return a.first < b.first; });
    for (size_t i = 0; i < n; ++i) { keys[i] = pairs[i].first; ids[i] = pairs[i].second; }
}

#endif
