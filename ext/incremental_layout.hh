// The incremental search's per-pop records (decoder._ext._incremental, declared in _incremental.pxd),
// each one 64-byte cache line, aligned: a trie node or a partial edge read at random costs one line,
// never two (at 56 bytes, or 64 bytes at malloc's 16-byte alignment, most straddled two).
#ifndef CKY_INCREMENTAL_LAYOUT_HH
#define CKY_INCREMENTAL_LAYOUT_HH

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

/* One node of a vertex's boundary-word trie (fields: _incremental.pxd). */
struct alignas(64) TrieNode {
    double score;
    uint64_t state_key;
    int32_t first_child;
    int32_t n_children;
    int32_t rank;
    int32_t item;
    uint32_t reveals;
    uint32_t below;
    int32_t state_offset;
    int32_t n_items;
    int32_t flat_lo;
    int32_t item_state_offset;
    int16_t depth;
    int16_t n_states;
};

/* A hyperedge with tails still being refined (fields: _incremental.pxd). */
struct alignas(64) PartialEdge {
    double score;
    double fixed;
    float lm;
    int32_t group;
    int32_t rule_rank;
    int32_t complete;
    uint32_t relevant[2];
    int32_t node[2];
    int32_t first[2];
    int8_t flat[2];
    int8_t initial;
    int8_t scores_lm;
    int8_t estimated;
};

static_assert(sizeof(TrieNode) == 64, "TrieNode: one cache line");
static_assert(sizeof(PartialEdge) == 64, "PartialEdge: one cache line");

/* A copy of n bytes in memory of 2 MB pages where the kernel grants them (madvise before the first touch;
   free() it): the SortedRule records are read at random, a group's first rule per cell, and at 4 KB pages
   nearly every such read also misses the TLB (1.8M records, 87 MB on the Bible system). NULL: no memory. */
static inline void *cky_huge_copy(const void *src, size_t n) {
    const size_t huge = (size_t)2 << 20;
    const size_t size = (n + huge - 1) / huge * huge;
    void *block = nullptr;
    if (size == 0 || posix_memalign(&block, huge, size) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
    madvise(block, size, MADV_HUGEPAGE);
#endif
    std::memcpy(block, src, n);
    return block;
}

#endif  // CKY_INCREMENTAL_LAYOUT_HH
