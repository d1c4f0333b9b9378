// Small C++ helpers of the compiled SDIG search (decoder._ext._sdig), declared in _sdig.pxd.
#ifndef CKY_SDIG_CONTAINERS_HH
#define CKY_SDIG_CONTAINERS_HH

#include <algorithm>
#include <cstddef>
#include <cstdint>

struct SdigScored { double score; int32_t index; };

/* Best score first, ties in their original order: Python's stable list.sort(key=-score),
   which the pure-Python reference (decoder/sdig/search.py) uses. */
static inline void sdig_sort_best_first(SdigScored *first, size_t n) {
    std::stable_sort(first, first + n, [](const SdigScored &a, const SdigScored &b) {
        return a.score > b.score;
    });
}

#endif
