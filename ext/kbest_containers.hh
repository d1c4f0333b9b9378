// Small C++ containers of the compiled lazy k-best (decoder._ext._kbest): the
// ranked derivation record and its heap order, an exact set of (edge, ranks)
// triples, and an exact set of output word sequences. Declared to Cython in _kbest.pxd.
#ifndef CKY_KBEST_CONTAINERS_HH
#define CKY_KBEST_CONTAINERS_HH

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

/* A derivation of an item: its incoming edge and, per tail, the rank of the tail's
   derivation it uses (0 for an absent tail). Also a candidate in an item's heap. */
struct KBestDerivation { double score; int32_t edge; int32_t rank0; int32_t rank1; };

/* The order of the Python reference's heaps of (-score, edge, ranks): best score first,
   ties by smaller edge, then smaller ranks. `kbest_after(a, b)`: a is popped after b. */
static inline bool kbest_after(const KBestDerivation &a, const KBestDerivation &b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.edge != b.edge) return a.edge > b.edge;
    if (a.rank0 != b.rank0) return a.rank0 > b.rank0;
    return a.rank1 > b.rank1;
}

static inline void kbest_heap_push(std::vector<KBestDerivation> &heap, const KBestDerivation &d) {
    heap.push_back(d);
    std::push_heap(heap.begin(), heap.end(), kbest_after);
}

static inline KBestDerivation kbest_heap_pop(std::vector<KBestDerivation> &heap) {
    std::pop_heap(heap.begin(), heap.end(), kbest_after);
    KBestDerivation top = heap.back();
    heap.pop_back();
    return top;
}

static inline void kbest_heapify(std::vector<KBestDerivation> &heap) {
    std::make_heap(heap.begin(), heap.end(), kbest_after);
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

/* An exact set of (edge, rank0, rank1) triples (open addressing; O(1) clear by generation stamp). */
struct KBestSeenSet {
    struct Key { int32_t edge, rank0, rank1; };
    std::vector<Key> keys_;
    std::vector<uint32_t> stamps_;
    uint32_t stamp_ = 1;
    size_t mask_ = 0, size_ = 0;
    KBestSeenSet() { reserve_slots(1024); }
    void reserve_slots(size_t capacity) {
        keys_.assign(capacity, Key{0, 0, 0}); stamps_.assign(capacity, 0);
        mask_ = capacity - 1; size_ = 0; stamp_ = 1;
    }
    void clear() {
        size_ = 0;
        if (++stamp_ == 0) { std::fill(stamps_.begin(), stamps_.end(), 0u); stamp_ = 1; }
    }
    size_t slot_of(int32_t edge, int32_t rank0, int32_t rank1) const {
        return kbest_slot(kbest_mix(kbest_mix((uint64_t)(uint32_t)edge, (uint64_t)(uint32_t)rank0),
                                    (uint64_t)(uint32_t)rank1)) & mask_;
    }
    bool contains(int32_t edge, int32_t rank0, int32_t rank1) const {
        for (size_t i = slot_of(edge, rank0, rank1); stamps_[i] == stamp_; i = (i + 1) & mask_) {
            const Key &k = keys_[i];
            if (k.edge == edge && k.rank0 == rank0 && k.rank1 == rank1) return true;
        }
        return false;
    }
    /* Add the triple; true if it was new. */
    bool insert(int32_t edge, int32_t rank0, int32_t rank1) {
        if ((size_ + 1) * 2 > mask_ + 1) grow();
        size_t i = slot_of(edge, rank0, rank1);
        for (; stamps_[i] == stamp_; i = (i + 1) & mask_) {
            const Key &k = keys_[i];
            if (k.edge == edge && k.rank0 == rank0 && k.rank1 == rank1) return false;
        }
        stamps_[i] = stamp_; keys_[i] = Key{edge, rank0, rank1}; ++size_;
        return true;
    }
    void grow() {
        std::vector<Key> old_keys; std::vector<uint32_t> old_stamps;
        old_keys.swap(keys_); old_stamps.swap(stamps_);
        const uint32_t live = stamp_;
        reserve_slots(old_keys.size() * 2);
        for (size_t j = 0; j < old_keys.size(); ++j)
            if (old_stamps[j] == live) insert(old_keys[j].edge, old_keys[j].rank0, old_keys[j].rank1);
    }
};

/* An exact set of word-id sequences (the outputs seen so far): the sequences are kept
   whole, so two outputs are the same only if every word is. */
struct KBestYieldSet {
    std::vector<int32_t> words_;      // the sequences, one after another
    std::vector<size_t> offsets_{0};  // sequence s is words_[offsets_[s], offsets_[s + 1])
    std::vector<uint64_t> hashes_;
    std::vector<int32_t> slots_;      // open addressing: sequence index + 1, 0 = empty
    size_t mask_ = 1023;
    KBestYieldSet() : slots_(1024, 0) {}
    void clear() {
        words_.clear(); offsets_.assign(1, 0); hashes_.clear();
        std::fill(slots_.begin(), slots_.end(), 0);
    }
    static uint64_t hash_of(const int32_t *words, size_t n) {
        uint64_t h = kbest_mix(0x51ED270B27A1F3CDULL, (uint64_t)n);
        for (size_t t = 0; t < n; ++t) h = kbest_mix(h, (uint64_t)(uint32_t)words[t]);
        return h;
    }
    bool same(int32_t s, const int32_t *words, size_t n) const {
        const size_t lo = offsets_[s], hi = offsets_[s + 1];
        return hi - lo == n && (n == 0 || std::memcmp(&words_[lo], words, n * sizeof(int32_t)) == 0);
    }
    /* Add the sequence; true if it was new. */
    bool insert(const int32_t *words, size_t n) {
        const uint64_t h = hash_of(words, n);
        size_t i = kbest_slot(h) & mask_;
        for (; slots_[i] != 0; i = (i + 1) & mask_) {
            const int32_t s = slots_[i] - 1;
            if (hashes_[s] == h && same(s, words, n)) return false;
        }
        const int32_t s = (int32_t)hashes_.size();
        words_.insert(words_.end(), words, words + n);
        offsets_.push_back(words_.size());
        hashes_.push_back(h);
        slots_[i] = s + 1;
        if (hashes_.size() * 2 > mask_ + 1) grow();
        return true;
    }
    void grow() {
        mask_ = mask_ * 2 + 1;
        slots_.assign(mask_ + 1, 0);
        for (size_t s = 0; s < hashes_.size(); ++s) {
            size_t i = kbest_slot(hashes_[s]) & mask_;
            while (slots_[i] != 0) i = (i + 1) & mask_;
            slots_[i] = (int32_t)s + 1;
        }
    }
};

#endif  // CKY_KBEST_CONTAINERS_HH
