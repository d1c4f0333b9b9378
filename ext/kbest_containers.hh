// Small C++ containers of the compiled lazy k-best (decoder._ext._kbest): the
// ranked derivation record and its heap order, an exact set of triples (edge and
// ranks; output hashes), and the polynomial hash of output word sequences.
// Declared to Cython in _kbest.pxd.
#ifndef CKY_KBEST_CONTAINERS_HH
#define CKY_KBEST_CONTAINERS_HH

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "search_errors.hh"

/* A derivation of an item: its incoming edge and, per tail, the rank of the tail's
   derivation it uses (0 for an absent tail). Also a candidate in an item's heap.
   `blocks`: where the hashes of its output blocks are (-1: not computed yet). */
struct KBestDerivation { double score; int32_t edge; int32_t rank0; int32_t rank1; int32_t blocks; };

/* The order of the Python reference's heaps of (-score, edge, ranks): best score first,
   ties by smaller edge, then smaller ranks. `kbest_after(a, b)`: a is popped after b. */
static inline bool kbest_after(const KBestDerivation &a, const KBestDerivation &b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.edge != b.edge) return a.edge > b.edge;
    if (a.rank0 != b.rank0) return a.rank0 > b.rank0;
    return a.rank1 > b.rank1;
}

struct KBestAfter {  // a type, not a function pointer: the heap code inlines it
    bool operator()(const KBestDerivation &a, const KBestDerivation &b) const { return kbest_after(a, b); }
};

static inline void kbest_heap_push(std::vector<KBestDerivation> &heap, const KBestDerivation &d) {
    heap.push_back(d);
    std::push_heap(heap.begin(), heap.end(), KBestAfter());
}

static inline KBestDerivation kbest_heap_pop(std::vector<KBestDerivation> &heap) {
    std::pop_heap(heap.begin(), heap.end(), KBestAfter());
    KBestDerivation top = heap.back();
    heap.pop_back();
    return top;
}

static inline void kbest_heapify(std::vector<KBestDerivation> &heap) {
    std::make_heap(heap.begin(), heap.end(), KBestAfter());
}

static inline uint64_t kbest_mix(uint64_t h, uint64_t x) {
    x *= 0x9E3779B97F4A7C15ULL;
    x ^= x >> 29;
    h ^= x + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h;
}

static inline size_t kbest_slot(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
    return (size_t)k;
}

/* An exact set of triples of 64-bit values (open addressing; O(1) clear by generation stamp). */
struct KBestTripleSet {
    struct Key { uint64_t a, b, c; };
    std::vector<Key> keys_;
    std::vector<uint32_t> stamps_;
    uint32_t stamp_ = 1;
    size_t mask_ = 0, size_ = 0;
    KBestTripleSet() { reserve_slots(1024); }
    void reserve_slots(size_t capacity) {
        keys_.assign(capacity, Key{0, 0, 0}); stamps_.assign(capacity, 0);
        mask_ = capacity - 1; size_ = 0; stamp_ = 1;
    }
    void clear() {
        size_ = 0;
        if (++stamp_ == 0) { std::fill(stamps_.begin(), stamps_.end(), 0u); stamp_ = 1; }
    }
    size_t slot_of(uint64_t a, uint64_t b, uint64_t c) const {
        return kbest_slot(kbest_mix(kbest_mix(a, b), c)) & mask_;
    }
    bool contains(uint64_t a, uint64_t b, uint64_t c) const {
        for (size_t i = slot_of(a, b, c); stamps_[i] == stamp_; i = (i + 1) & mask_) {
            const Key &k = keys_[i];
            if (k.a == a && k.b == b && k.c == c) return true;
        }
        return false;
    }
    /* Add the triple; true if it was new. */
    bool insert(uint64_t a, uint64_t b, uint64_t c) {
        if ((size_ + 1) * 2 > mask_ + 1) grow();
        size_t i = slot_of(a, b, c);
        for (; stamps_[i] == stamp_; i = (i + 1) & mask_) {
            const Key &k = keys_[i];
            if (k.a == a && k.b == b && k.c == c) return false;
        }
        stamps_[i] = stamp_; keys_[i] = Key{a, b, c}; ++size_;
        return true;
    }
    void grow() {
        std::vector<Key> old_keys; std::vector<uint32_t> old_stamps;
        old_keys.swap(keys_); old_stamps.swap(stamps_);
        const uint32_t live = stamp_;
        reserve_slots(old_keys.size() * 2);
        for (size_t j = 0; j < old_keys.size(); ++j)
            if (old_stamps[j] == live) insert(old_keys[j].a, old_keys[j].b, old_keys[j].c);
    }
};

/* A word sequence by its length and two polynomial hashes modulo the Mersenne prime 2^61 - 1
   (bases below): blocks concatenate without their words, h(a b) = h(a) * B^|b| + h(b), so a
   derivation's output hash comes from its tails' in O(its rule's target). Two different
   outputs of one sentence collide with probability about length / 2^122. */
struct KBestBlockHash { uint64_t h1, h2; int64_t length; };

static const uint64_t KBEST_PRIME = (1ULL << 61) - 1;
static const uint64_t KBEST_BASE1 = 0x1F3D5B79A2C4E6ULL % ((1ULL << 61) - 1);
static const uint64_t KBEST_BASE2 = 0x0D6E8FEB86659FD9ULL % ((1ULL << 61) - 1);

static inline uint64_t kbest_mulmod(uint64_t a, uint64_t b) {
    const __uint128_t p = (__uint128_t)a * b;
    uint64_t r = (uint64_t)(p & KBEST_PRIME) + (uint64_t)(p >> 61);
    return r >= KBEST_PRIME ? r - KBEST_PRIME : r;
}

static inline uint64_t kbest_addmod(uint64_t a, uint64_t b) {
    const uint64_t r = a + b;
    return r >= KBEST_PRIME ? r - KBEST_PRIME : r;
}

/* Powers of the two bases, grown on demand. */
struct KBestPowers {
    std::vector<uint64_t> p1{1}, p2{1};
    void need(int64_t n) {
        while ((int64_t)p1.size() <= n) {
            p1.push_back(kbest_mulmod(p1.back(), KBEST_BASE1));
            p2.push_back(kbest_mulmod(p2.back(), KBEST_BASE2));
        }
    }
};

static inline void kbest_append_word(KBestBlockHash &h, int32_t word) {
    const uint64_t w = (uint64_t)(uint32_t)word + 1;  // never 0: "a" and "0 a" differ
    h.h1 = kbest_addmod(kbest_mulmod(h.h1, KBEST_BASE1), w);
    h.h2 = kbest_addmod(kbest_mulmod(h.h2, KBEST_BASE2), w);
    h.length += 1;
}

static inline void kbest_append_block(KBestBlockHash &h, const KBestBlockHash &block, KBestPowers &powers) {
    powers.need(block.length);
    h.h1 = kbest_addmod(kbest_mulmod(h.h1, powers.p1[block.length]), block.h1);
    h.h2 = kbest_addmod(kbest_mulmod(h.h2, powers.p2[block.length]), block.h2);
    h.length += block.length;
}

#endif  // CKY_KBEST_CONTAINERS_HH
