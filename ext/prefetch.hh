// A hint to fetch the cache line holding `address` (GCC and Clang builtin): a caller with
// several table look-ups to make requests all their slots before the first one.
#ifndef CKY_PREFETCH_HH
#define CKY_PREFETCH_HH

static inline void cky_prefetch(const void *address) { __builtin_prefetch(address); }

#endif  // CKY_PREFETCH_HH
