// Small C++ containers of the compiled chart search (decoder._ext._chart):
// the sort of a cell's items, an open-addressing hash map, the cube-pruning
// heap, a hash-combining step and the home slot of a key in open addressing. Declared to Cython in _chart_containers.pxd.
#ifndef CKY_CHART_CONTAINERS_HH
#define CKY_CHART_CONTAINERS_HH

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "search_errors.hh"

/* 16 bytes (the score first: no padding). */
struct CkySortEntry { double score; int32_t symbol; int32_t id; };

/* Within one symbol: best score first (ties: older item first). */
static inline bool cky_entry_before(const CkySortEntry &a, const CkySortEntry &b) {
    if (a.score != b.score) return a.score > b.score;
    return a.id < b.id;
}

/* By symbol, then cky_entry_before. */
static inline void cky_sort_entries(CkySortEntry *first, size_t n) {
    std::sort(first, first + n, [](const CkySortEntry &a, const CkySortEntry &b) {
        if (a.symbol != b.symbol) return a.symbol < b.symbol;
        return cky_entry_before(a, b);
    });
}

/* Orders a cell's items as cky_sort_entries does, in about a third of its time on a real chart: a cell's
   items arrive in their search's pop order (ids ascending), so each symbol's scores mostly descend
   already. A stable LSD radix sort by symbol (8-bit digits, the digits that vary only) groups them, keeping
   that order inside each symbol; each symbol's run is then insertion-sorted, which costs a comparison per
   entry plus a move per inversion (a run with more than CKY_SORT_MOVES_PER_ENTRY moves per entry is
   finished by std::sort). The order is total (ties by id), so the result is cky_sort_entries'. On the
   Bible system at pop limit 1000, a cell sorts ~550 items of ~290 symbols, with 0.13-0.17 moves per item.
   (A negative symbol, which no item has, would sort last as an unsigned digit: such input goes to
   cky_sort_entries.) */
enum { CKY_SORT_MOVES_PER_ENTRY = 4, CKY_SORT_SMALL = 32 };

struct CkyItemSorter {
    std::vector<CkySortEntry> buffer;

    void sort(CkySortEntry *first, size_t n) {
        if (n < CKY_SORT_SMALL) {
            cky_sort_entries(first, n);
            return;
        }
        uint32_t count[4][256] = {};
        for (size_t i = 0; i < n; ++i) {
            const uint32_t s = (uint32_t)first[i].symbol;
            ++count[0][s & 255];
            ++count[1][(s >> 8) & 255];
            ++count[2][(s >> 16) & 255];
            ++count[3][s >> 24];
        }
        uint32_t negative = 0;
        for (int b = 128; b < 256; ++b) negative |= count[3][b];
        if (negative) {
            cky_sort_entries(first, n);
            return;
        }
        buffer.resize(n);
        CkySortEntry *from = first, *to = buffer.data();
        for (int digit = 0; digit < 4; ++digit) {
            uint32_t *c = count[digit];
            const int shift = 8 * digit;
            if (c[(uint32_t)first[0].symbol >> shift & 255] == n) continue;  // one value: nothing moves
            uint32_t position = 0;
            for (int b = 0; b < 256; ++b) {
                const uint32_t k = c[b];
                c[b] = position;
                position += k;
            }
            for (size_t i = 0; i < n; ++i) to[c[(uint32_t)from[i].symbol >> shift & 255]++] = from[i];
            std::swap(from, to);
        }
        size_t lo = 0;
        while (lo < n) {
            size_t hi = lo + 1;
            while (hi < n && from[hi].symbol == from[lo].symbol) ++hi;
            if (hi - lo > 1) sort_run(from + lo, hi - lo);
            lo = hi;
        }
        if (from != first) std::copy(from, from + n, first);
    }

  private:
    void sort_run(CkySortEntry *a, size_t n) {
        size_t budget = CKY_SORT_MOVES_PER_ENTRY * n;
        for (size_t i = 1; i < n; ++i) {
            if (!cky_entry_before(a[i], a[i - 1])) continue;
            const CkySortEntry value = a[i];
            size_t j = i;
            do {
                a[j] = a[j - 1];
                --j;
            } while (j > 0 && cky_entry_before(value, a[j - 1]));
            a[j] = value;
            const size_t moved = i - j;
            if (moved >= budget) {
                std::sort(a, a + n, cky_entry_before);
                return;
            }
            budget -= moved;
        }
    }
};

/* A new element at the end of v, value-initialized (all zero for a C struct), to be filled in place.
   Building a struct on the stack and push_back-ing it makes the compiler store its fields one by
   one and load them back 16 bytes at a time for the copy: a stalled store-to-load forward per
   element (perf: most of _add_edge's and the group-building functions' own cycles). */
template <class T> static inline T *cky_append(std::vector<T> &v) {
    v.emplace_back();
    return &v.back();
}

/* The number of bits set in x (the position of a wide left symbol's bit among a right symbol's mask). */
static inline int cky_popcount64(uint64_t x) { return __builtin_popcountll(x); }

/* The home slot (before the mask) of a 64-bit key in an open-addressing table (CkyStampedMap's). */
static inline size_t cky_home_slot(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 29;
    return (size_t)key;
}

/* Open-addressing hash map from (already mixed) 64-bit keys to values of type V: no
   allocation per entry, O(1) clear (a generation stamp per slot). A slot holds its
   key, value and stamp together: a probe reads one cache line. */
template <class V> struct CkyStampedMap {
    struct Slot { uint64_t key; V value; uint32_t stamp; };
    std::vector<Slot> slots_;
    uint32_t stamp_ = 1;
    size_t mask_ = 0, size_ = 0;
    static const size_t MIN_SLOTS = 1024;
    CkyStampedMap() { reserve_slots(MIN_SLOTS); }
    void reserve_slots(size_t capacity) {
        slots_.assign(capacity, Slot{0, V(), 0});
        mask_ = capacity - 1; size_ = 0; stamp_ = 1;
    }
    size_t size() const { return size_; }
    size_t bytes() const { return slots_.size() * sizeof(Slot); }  // the table's memory (for memory_budget_mb)
    void clear() {
        size_ = 0;
        if (++stamp_ == 0) { for (Slot &slot : slots_) slot.stamp = 0; stamp_ = 1; }
    }
    /* Clear, and size the table for about as many keys as it held (at most a quarter full with them, at
       least FITTED_MIN_SLOTS slots): a map cleared for every cell of a sentence then probes a table that fits
       its cells (a small cell's probes stay in a few cache lines), growing when a cell needs more. The
       buffer is kept (assign within its capacity), so shrinking allocates nothing. */
    static const size_t FITTED_MIN_SLOTS = 64;
    void clear_fitted() {
        const size_t target = fitted_slots(FITTED_MIN_SLOTS);
        if (target == mask_ + 1) clear();
        else reserve_slots(target);
    }
    /* The table size (a power of two, at least min_slots) at which the keys held now fill a quarter. */
    size_t fitted_slots(size_t min_slots) const {
        size_t target = min_slots;
        while (target < 4 * size_) target *= 2;
        return target;
    }
    V *find(uint64_t key) {
        size_t i = cky_home_slot(key) & mask_;
        while (slots_[i].stamp == stamp_) {
            if (slots_[i].key == key) return &slots_[i].value;
            i = (i + 1) & mask_;
        }
        return nullptr;
    }
    /* Set key's value; true if the key was new. */
    bool set(uint64_t key, V value) {
        if ((size_ + 1) * 2 > mask_ + 1) grow();
        size_t i = cky_home_slot(key) & mask_;
        while (slots_[i].stamp == stamp_) {
            if (slots_[i].key == key) { slots_[i].value = value; return false; }
            i = (i + 1) & mask_;
        }
        slots_[i].stamp = stamp_; slots_[i].key = key; slots_[i].value = value; ++size_;
        return true;
    }
    void grow() {
        std::vector<Slot> old_slots;
        old_slots.swap(slots_);
        const uint32_t live = stamp_;
        reserve_slots(old_slots.size() * 2);
        for (const Slot &slot : old_slots)
            if (slot.stamp == live) set(slot.key, slot.value);
    }
};

/* int32 values: item and group indexes (the chart's tables). */
typedef CkyStampedMap<int32_t> CkyHashMap;

/* A max-heap of (score, hypothesis index): small entries to move around. */
struct CkyHeapEntry { double score; int32_t index; };
static inline bool operator<(const CkyHeapEntry &a, const CkyHeapEntry &b) { return a.score < b.score; }

static inline void cky_heap_push(std::vector<CkyHeapEntry> &heap, double score, int32_t index) {
    heap.push_back(CkyHeapEntry{score, index});
    std::push_heap(heap.begin(), heap.end());
}

static inline int32_t cky_heap_pop(std::vector<CkyHeapEntry> &heap) {
    std::pop_heap(heap.begin(), heap.end());
    const int32_t index = heap.back().index;
    heap.pop_back();
    return index;
}

/* The glue rules' LM target sides (GOAL -> GOAL X is block 1 then block 2; GOAL -> X is <s> then the
   child, ChartSearch.glue_start_target) and the keys that stand for them in the LM caches, where a
   grammar rule's target hash would. One home for the cube and the incremental search. */
static const int32_t CKY_GLUE_CONCAT_TARGET[2] = {-1, -2};
static const uint64_t CKY_GLUE_CONCAT_HASH = 0x5bd1e995ULL;
static const uint64_t CKY_GLUE_START_HASH = 0x27d4eb2f165667c5ULL;

/* murmur3's 64-bit finalizer: a bijection that mixes every input bit into every output bit. */
static inline uint64_t cky_fmix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* Combine x into the hash h. A bijection in h for a fixed x and in x for a fixed h, so chained
   keys such as the cube corners (group, rule rank, left rank, right rank) collide only by chance
   (about 2^-64 per pair). The boost-style `h ^= f(x) + (h << 6) + (h >> 2)` used before is not a
   bijection in h: (143, 0, 0, 0) and (147, 0, 0, 0) hashed alike, so cube pruning's `seen` set
   took a group's first corner for one already pushed and never explored that cube. */
static inline uint64_t cky_mix(uint64_t h, uint64_t x) {
    return cky_fmix(h ^ cky_fmix(x + 0x9E3779B97F4A7C15ULL));
}

#endif  // CKY_CHART_CONTAINERS_HH
