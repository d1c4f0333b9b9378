// The stable sort the incremental search's trie building needs (decoder._ext._incremental):
// a vertex's items, best first, grouped by one boundary token without losing their order; its
// queue: a 4-ary max-heap of (score, push order) keys with a reserve for large batches and a deferred pop; and
// its cache of partial edges' LM scores.
#ifndef CKY_INCREMENTAL_SORT_HH
#define CKY_INCREMENTAL_SORT_HH

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
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

/* The incremental search's queue key: (score, push order) as one unsigned 128-bit integer, greater =
   popped first. The high 64 bits are the score's bits mapped to an unsigned integer of the same order
   (exact for every double but NaN; -0 counted as +0, so that equal scores are equal keys); the low 64 the
   complement of the push sequence number (among equal scores the one pushed first is greater), then the
   entry's index. Keys are unique, so every correct max-queue over them pops the same entries in the same
   order, whatever its shape: the heap below, its reserve and its deferred pop change nothing but the cost. */
typedef unsigned __int128 CkyQueueKey;
struct CkyQueueSlot { CkyQueueKey key; };

static inline uint64_t cky_queue_score_bits(double score) {
    if (score == 0.0) score = 0.0;  /* -0 -> +0 */
    uint64_t bits;
    std::memcpy(&bits, &score, sizeof bits);
    return (bits >> 63) ? ~bits : (bits | 0x8000000000000000ULL);
}

static inline double cky_queue_key_score(CkyQueueKey key) {
    uint64_t bits = (uint64_t)(key >> 64);
    bits = (bits >> 63) ? (bits & 0x7FFFFFFFFFFFFFFFULL) : ~bits;
    double score;
    std::memcpy(&score, &bits, sizeof score);
    return score;
}

static inline int32_t cky_queue_key_index(CkyQueueKey key) { return (int32_t)(uint32_t)key; }

static inline CkyQueueKey cky_queue_key(double score, int32_t index, uint32_t seq) {
    return ((CkyQueueKey)cky_queue_score_bits(score) << 64) | ((CkyQueueKey)(uint32_t)~seq << 32) |
           (CkyQueueKey)(uint32_t)index;
}

/* Batch slot i (append_room after clear): its key, pushed i-th. */
static inline void cky_queue_put(CkyQueueSlot *batch, size_t i, double score, int32_t index) {
    batch[i].key = cky_queue_key(score, index, (uint32_t)i);
}

/* The incremental search's queue of (score, index): the best score first, among equal scores the entry
   pushed first (a total order by CkyQueueKey; tests: queue_pops against a sort).

   - A 4-ary max-heap; logical entry i at slot i + 3 of a 64-byte aligned block, so that the four children
     of an entry (4i + 1 .. 4i + 4) are one cache line.
   - A reserve: a batch (make) larger than 2 * reserve_k keeps only its reserve_k best entries in the heap
     (std::nth_element, no order) and the rest unsorted beside it, with their best key known. Whenever the
     heap's best falls below that (or the heap empties) the next best of the reserve move into the heap:
     reserve_k of them, then as many as moved before (doubling), each by nth_element. Most of a cell's
     initial edges are never popped, and so never sorted nor sifted, and the heap stays shallow.
   - A deferred pop: pop() returns the best entry but leaves its slot (the root) a hole until the next push,
     which puts the pushed entry there and sifts it down (the search pushes refinements of what it just
     popped: they stay near the root, so the sift stops early), or the next pop, which removes the hole
     bottom-up (Wegener: down the best children to the bottom, then the last entry up from there). While
     the hole is there, top() is the better of the root's children and the reserve's best. */
struct CkyQueue {
    CkyQueueKey *raw_ = nullptr;   /* the aligned block (slot 0) */
    CkyQueueKey *h_ = nullptr;     /* logical entry 0 (raw_ + 3) */
    size_t n_ = 0, capacity_ = 0;  /* heap entries (with the hole) */
    bool hole_ = false;            /* h_[0] popped, not yet replaced or removed */
    uint32_t seq_ = 0;             /* pushes since clear */
    std::vector<CkyQueueKey> reserve_;  /* reserve_[0:reserve_n_]: unsorted, none better than the heap's best */
    size_t reserve_n_ = 0, moved_ = 0;
    CkyQueueKey reserve_best_ = 0;
    size_t reserve_k_ = 0;         /* 0: no reserve */

    CkyQueue() {}
    CkyQueue(const CkyQueue &) = delete;
    CkyQueue &operator=(const CkyQueue &) = delete;
    ~CkyQueue() { std::free(raw_); }

    size_t size() const { return n_ - (size_t)hole_ + reserve_n_; }
    bool empty() const { return size() == 0; }
    void clear() { n_ = 0; hole_ = false; seq_ = 0; reserve_n_ = 0; moved_ = 0; }
    void set_reserve(size_t k) { reserve_k_ = k; }
    size_t heap_size() const { return n_ - (size_t)hole_; }

    void reserve(size_t capacity) {
        if (capacity <= capacity_) return;
        size_t grown = capacity_ < 64 ? 64 : capacity_;
        while (grown < capacity) grown *= 2;
        void *block = nullptr;
        if (posix_memalign(&block, 64, (grown + 4) * sizeof(CkyQueueKey)) != 0) throw std::bad_alloc();
        CkyQueueKey *raw = static_cast<CkyQueueKey *>(block);
        if (n_ > 0) std::memcpy(raw + 3, h_, n_ * sizeof(CkyQueueKey));
        std::free(raw_);
        raw_ = raw;
        h_ = raw + 3;
        capacity_ = grown;
    }

    /* After clear: room for k entries written in place (cky_queue_put), then set_size with how many were,
       and make. */
    CkyQueueSlot *append_room(size_t k) {
        reserve(n_ + k);
        return reinterpret_cast<CkyQueueSlot *>(h_ + n_);
    }
    void set_size(size_t n) { n_ = n; seq_ = (uint32_t)n; }

    /* Append without ordering (then make). */
    void push_back(double score, int32_t index) {
        if (n_ == capacity_) reserve(n_ + 1);
        h_[n_++] = cky_queue_key(score, index, seq_++);
    }

    /* The best key (the queue is not empty). */
    CkyQueueKey top_key() const {
        if (!hole_) return h_[0];
        CkyQueueKey best = 0;
        const size_t last = n_ < 5 ? n_ : 5;
        for (size_t c = 1; c < last; ++c) best = h_[c] > best ? h_[c] : best;
        return reserve_n_ > 0 && reserve_best_ > best ? reserve_best_ : best;
    }
    CkyHeapEntry top() const {
        const CkyQueueKey key = top_key();
        return CkyHeapEntry{cky_queue_key_score(key), cky_queue_key_index(key)};
    }
    double top_score() const { return cky_queue_key_score(top_key()); }
    int32_t top_index() const { return cky_queue_key_index(top_key()); }

    void sift_down(size_t hole, const CkyQueueKey value) {
        CkyQueueKey *h = h_;
        const size_t n = n_;
        for (;;) {
            const size_t first = 4 * hole + 1;
            size_t best;
            CkyQueueKey best_key;
            if (first + 4 <= n) {
                const CkyQueueKey *c = h + first;
                const CkyQueueKey k0 = c[0], k1 = c[1], k2 = c[2], k3 = c[3];
                const size_t x = k0 < k1, y = k2 < k3;
                const CkyQueueKey m01 = x ? k1 : k0, m23 = y ? k3 : k2;
                const size_t z = m01 < m23;
                best = first + 2 * z + (z ? y : x);
                best_key = z ? m23 : m01;
            } else {
                if (first >= n) break;
                best = first;
                for (size_t c = first + 1; c < n; ++c)
                    if (h[best] < h[c]) best = c;
                best_key = h[best];
            }
            if (!(value < best_key)) break;
            h[hole] = best_key;
            hole = best;
        }
        h[hole] = value;
    }

    void sift_up(size_t hole, const CkyQueueKey value) {
        CkyQueueKey *h = h_;
        while (hole > 0) {
            const size_t parent = (hole - 1) / 4;
            if (!(h[parent] < value)) break;
            h[hole] = h[parent];
            hole = parent;
        }
        h[hole] = value;
    }

    /* Order the entries appended since the queue was empty (keeping all but the best reserve_k of a large
       batch in the reserve). */
    void make() {
        if (reserve_k_ > 0 && n_ > 2 * reserve_k_) {
            const size_t rest = n_ - reserve_k_;
            std::nth_element(h_, h_ + rest, h_ + n_);  /* the best reserve_k_ at h_[rest:n_] */
            if (reserve_.size() < rest) reserve_.resize(rest);
            std::memcpy(reserve_.data(), h_, rest * sizeof(CkyQueueKey));
            std::memmove(h_, h_ + rest, reserve_k_ * sizeof(CkyQueueKey));
            n_ = reserve_k_;
            reserve_n_ = rest;
            moved_ = reserve_k_;
            reserve_best_ = *std::max_element(reserve_.data(), reserve_.data() + rest);
        }
        if (n_ < 2) return;
        for (size_t i = (n_ - 2) / 4 + 1; i-- > 0;) sift_down(i, h_[i]);
    }

    /* The next best of the reserve into the heap, while the heap's best is below the reserve's best. */
    void settle() {
        while (reserve_n_ > 0 && (n_ == 0 || h_[0] < reserve_best_)) {
            CkyQueueKey *r = reserve_.data();
            const size_t m = moved_ < reserve_n_ ? moved_ : reserve_n_;
            const size_t rest = reserve_n_ - m;
            if (rest > 0) std::nth_element(r, r + rest, r + reserve_n_);
            reserve(n_ + m);
            for (size_t i = rest; i < reserve_n_; ++i) {
                const size_t hole = n_++;
                sift_up(hole, r[i]);
            }
            moved_ += m;
            reserve_n_ = rest;
            if (rest > 0) reserve_best_ = *std::max_element(r, r + rest);
        }
    }

    void push(double score, int32_t index) {
        const CkyQueueKey key = cky_queue_key(score, index, seq_++);
        if (hole_) {  /* the popped root's slot */
            hole_ = false;
            sift_down(0, key);
            settle();
            return;
        }
        if (n_ == capacity_) reserve(n_ + 1);
        const size_t hole = n_++;
        sift_up(hole, key);
    }

    /* Remove the hole at the root: bottom-up, down the best children (the choice branch-free, the trip count
       set by the depth alone; each level requests the next one's child lines), then the last entry up. */
    void remove_hole() {
        hole_ = false;
        CkyQueueKey *h = h_;
        const size_t n = --n_;
        if (n == 0) { settle(); return; }
        const CkyQueueKey value = h[n];
        size_t hole = 0;
        for (;;) {
            const size_t first = 4 * hole + 1;
            if (first + 4 > n) break;
            const CkyQueueKey *c = h + first;
            if (16 * hole + 5 < n) {
                const char *next = reinterpret_cast<const char *>(h + 16 * hole + 5);
                __builtin_prefetch(next);
                __builtin_prefetch(next + 64);
                __builtin_prefetch(next + 128);
                __builtin_prefetch(next + 192);
            }
            const CkyQueueKey k0 = c[0], k1 = c[1], k2 = c[2], k3 = c[3];
            const size_t x = k0 < k1, y = k2 < k3;
            const CkyQueueKey m01 = x ? k1 : k0, m23 = y ? k3 : k2;
            const size_t z = m01 < m23;
            const size_t best = first + 2 * z + (x ^ ((x ^ y) & (0 - z)));
            h[hole] = z ? m23 : m01;
            hole = best;
        }
        {   /* a last level with fewer than four children (entries first..n-1) */
            const size_t first = 4 * hole + 1;
            if (first < n) {
                size_t best = first;
                for (size_t c = first + 1; c < n; ++c)
                    if (h[best] < h[c]) best = c;
                h[hole] = h[best];
                hole = best;
            }
        }
        sift_up(hole, value);
        settle();
    }

    /* Remove and return the best entry (the queue is not empty): its slot stays a hole until the next push
       or pop. */
    CkyHeapEntry pop() {
        if (hole_) remove_hole();
        hole_ = true;
        const CkyQueueKey key = h_[0];
        return CkyHeapEntry{cky_queue_key_score(key), cky_queue_key_index(key)};
    }
};

/* The partial edges' LM cache of one queue search: 64-bit keys (already mixed) to float scores, open
   addressing with the score in the slot (one cache line per probe), O(1) clear by a generation stamp.
   A clear after a search that used a sixteenth of the table or less makes it small again, so that the
   probes of the many small cells' searches stay in the CPU cache, not spread over a table that one big
   cell grew. */
struct CkyScoreCache : CkyStampedMap<float> {
    void clear() {
        if (slots_.size() > MIN_SLOTS && size_ * 16 <= slots_.size()) {
            reserve_slots(fitted_slots(MIN_SLOTS));
            return;
        }
        CkyStampedMap<float>::clear();
    }
};

static inline void cky_queue_make(CkyQueue &queue) { queue.make(); }
static inline void cky_queue_push(CkyQueue &queue, double score, int32_t index) { queue.push(score, index); }
static inline CkyHeapEntry cky_queue_pop(CkyQueue &queue) { return queue.pop(); }

#endif
