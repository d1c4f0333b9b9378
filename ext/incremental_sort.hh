// The stable sort the incremental search's trie building needs (decoder._ext._incremental):
// a vertex's items, best first, grouped by one boundary token without losing their order; its
// queue: a 4-ary max-heap of chart_containers.hh's CkyHeapEntry (made from a batch at once); and
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

/* The incremental search's queue: a 4-ary max-heap of CkyHeapEntry by score (half the levels of a
   binary heap; most of its work is pops). Logical entry i is at slot i + 3 of a 64-byte aligned block,
   so that the four children of an entry (4i + 1 .. 4i + 4) are the four 16-byte entries of one cache
   line. Sifting down picks the first of the children with the highest score, as a left-to-right scan
   with `<` does, by a tournament (no data-dependent branch): the same heap, pop for pop, as
   std::vector<CkyHeapEntry> with that scan (tests: queue_pops against a reference heap). */
struct CkyQueue {
    CkyHeapEntry *raw_ = nullptr;   /* the aligned block (slot 0) */
    CkyHeapEntry *h_ = nullptr;     /* logical entry 0 (raw_ + 3) */
    size_t n_ = 0, capacity_ = 0;

    CkyQueue() {}
    CkyQueue(const CkyQueue &) = delete;
    CkyQueue &operator=(const CkyQueue &) = delete;
    ~CkyQueue() { std::free(raw_); }

    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    void clear() { n_ = 0; }
    double top_score() const { return h_[0].score; }
    const CkyHeapEntry &operator[](size_t i) const { return h_[i]; }  /* [0]: the best */

    void reserve(size_t capacity) {
        if (capacity <= capacity_) return;
        size_t grown = capacity_ < 64 ? 64 : capacity_;
        while (grown < capacity) grown *= 2;
        void *block = nullptr;
        if (posix_memalign(&block, 64, (grown + 4) * sizeof(CkyHeapEntry)) != 0) throw std::bad_alloc();
        CkyHeapEntry *raw = static_cast<CkyHeapEntry *>(block);
        if (n_ > 0) std::memcpy(raw + 3, h_, n_ * sizeof(CkyHeapEntry));
        std::free(raw_);
        raw_ = raw;
        h_ = raw + 3;
        capacity_ = grown;
    }

    /* Room for k more entries appended in place (then set_size with how many were, and cky_queue_make). */
    CkyHeapEntry *append_room(size_t k) {
        reserve(n_ + k);
        return h_ + n_;
    }
    void set_size(size_t n) { n_ = n; }

    /* Append without ordering (then cky_queue_make). */
    void push_back(const CkyHeapEntry &entry) {
        if (n_ == capacity_) reserve(n_ + 1);
        h_[n_] = entry;
        ++n_;
    }

    void sift_down(size_t hole, const CkyHeapEntry value) {
        CkyHeapEntry *h = h_;
        const size_t n = n_;
        for (;;) {
            const size_t first = 4 * hole + 1;
            size_t best;
            double best_score;
            if (first + 4 <= n) {
                const CkyHeapEntry *c = h + first;
                const double s0 = c[0].score, s1 = c[1].score, s2 = c[2].score, s3 = c[3].score;
                const bool x = s0 < s1, y = s2 < s3;
                const double m01 = x ? s1 : s0, m23 = y ? s3 : s2;
                const bool z = m01 < m23;
                best = first + (z ? 2 + (size_t)y : (size_t)x);
                best_score = z ? m23 : m01;
            } else {
                if (first >= n) break;
                best = first;
                for (size_t c = first + 1; c < n; ++c)
                    if (h[best].score < h[c].score) best = c;
                best_score = h[best].score;
            }
            if (!(value.score < best_score)) break;
            h[hole] = h[best];
            hole = best;
        }
        h[hole] = value;
    }

    /* Order the entries appended since the queue was empty. */
    void make() {
        if (n_ < 2) return;
        for (size_t i = (n_ - 2) / 4 + 1; i-- > 0;) sift_down(i, h_[i]);
    }

    void push(double score, int32_t index) {
        if (n_ == capacity_) reserve(n_ + 1);
        CkyHeapEntry *h = h_;
        size_t hole = n_++;
        while (hole > 0) {
            const size_t parent = (hole - 1) / 4;
            if (!(h[parent].score < score)) break;
            h[hole] = h[parent];
            hole = parent;
        }
        h[hole].score = score;
        h[hole].index = index;
    }

    /* Remove and return the best entry (the queue is not empty). Bottom-up (Wegener): the hole left at the
       root goes down to the bottom along the best children (the first of the best, as sift_down picks them:
       a branch-free choice, the loop's trip count set by the heap's depth alone), then the last entry is
       sifted up from there while its parent's score is <= its own. Along the path the scores do not
       increase, so it stops below the last score greater than its own: where sift_down, which stops at
       the first child score <= its own, puts it. The same heap, pop for pop, ties included. Each level
       requests the next one's child lines (its children's children: four lines in a row). */
    CkyHeapEntry pop() {
        CkyHeapEntry *h = h_;
        const CkyHeapEntry top = h[0];
        const size_t n = --n_;
        if (n == 0) return top;
        const CkyHeapEntry value = h[n];
        size_t hole = 0;
        for (;;) {
            const size_t first = 4 * hole + 1;
            if (first + 4 > n) break;
            const CkyHeapEntry *c = h + first;
            if (16 * hole + 5 < n) {
                const char *next = reinterpret_cast<const char *>(h + 16 * hole + 5);
                __builtin_prefetch(next);
                __builtin_prefetch(next + 64);
                __builtin_prefetch(next + 128);
                __builtin_prefetch(next + 192);
            }
            const double s0 = c[0].score, s1 = c[1].score, s2 = c[2].score, s3 = c[3].score;
            const size_t x = s0 < s1, y = s2 < s3;
            const double m01 = x ? s1 : s0, m23 = y ? s3 : s2;
            const size_t z = m01 < m23;
            const size_t best = first + 2 * z + (x ^ ((x ^ y) & (0 - z)));
            h[hole] = h[best];
            hole = best;
        }
        {   /* a last level with fewer than four children (entries first..n-1): scanned as sift_down does */
            const size_t first = 4 * hole + 1;
            if (first < n) {
                size_t best = first;
                for (size_t c = first + 1; c < n; ++c)
                    if (h[best].score < h[c].score) best = c;
                h[hole] = h[best];
                hole = best;
            }
        }
        while (hole > 0) {
            const size_t parent = (hole - 1) / 4;
            if (!(h[parent].score <= value.score)) break;
            h[hole] = h[parent];
            hole = parent;
        }
        h[hole] = value;
        return top;
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
