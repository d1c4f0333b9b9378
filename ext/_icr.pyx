"""The iterative cost reduction sweep (Xiao et al. 2009) of decoder.binarize.icr, compiled.

`icr_sweep` works over flat span tables, with the semantics of
decoder.binarize.icr.icr_sweep_reference: for each active rule, remove its
nodes from the bucket counts, find the cheapest bracketing with the CKY
binarizer (ties to the smallest split point), take it only if it lowers Q
exactly, and put the nodes back. tests/test_binarize.py compares the two.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc

cdef extern from "prefetch.hh":
    void cky_prefetch(const void* address) noexcept nogil

cdef int64_t INF = 1 << 62


cdef int64_t cky_cheapest(int n, const int32_t* span_bucket, const int64_t* counts,
                          int64_t* best, int32_t* split_at, int32_t* codes_out) noexcept nogil:
    """Cheapest bracketing of n tokens; writes its n-1 span codes (post-order) to codes_out.
    Returns its cost, or -1 if no bracketing is feasible."""
    cdef int length, p, q, k, b, top = 0
    cdef int64_t c
    for p in range(n):
        for q in range(n):
            best[p * n + q] = INF
            split_at[p * n + q] = -1
        best[p * n + p] = 0
    for length in range(2, n + 1):
        for p in range(0, n - length + 1):
            q = p + length - 1
            b = span_bucket[p * n + q]
            if b < 0:
                continue
            for k in range(p, q):
                if best[p * n + k] == INF or best[(k + 1) * n + q] == INF:
                    continue
                c = best[p * n + k] + best[(k + 1) * n + q]
                if c < best[p * n + q]:
                    best[p * n + q] = c
                    split_at[p * n + q] = k
            if split_at[p * n + q] >= 0:
                best[p * n + q] += counts[b]
    if best[n - 1] == INF:
        return -1
    # Post-order collection with an explicit stack of (p, q, visited).
    cdef int32_t stack_p[2 * MAX_TOKENS]
    cdef int32_t stack_q[2 * MAX_TOKENS]
    cdef uint8_t stack_v[2 * MAX_TOKENS]
    cdef int sp = 0, out = 0
    stack_p[0] = 0; stack_q[0] = n - 1; stack_v[0] = 0; sp = 1
    while sp > 0:
        sp -= 1
        p = stack_p[sp]; q = stack_q[sp]
        if p == q:
            continue
        if stack_v[sp]:
            codes_out[out] = p * n + q
            out += 1
            continue
        k = split_at[p * n + q]
        stack_p[sp] = p; stack_q[sp] = q; stack_v[sp] = 1; sp += 1
        stack_p[sp] = k + 1; stack_q[sp] = q; stack_v[sp] = 0; sp += 1
        stack_p[sp] = p; stack_q[sp] = k; stack_v[sp] = 0; sp += 1
    return best[n - 1]


cdef inline int64_t exact_increase(int m, const int32_t* buckets, const int64_t* counts) noexcept nogil:
    """Growth of Q when m nodes with these buckets are added (k nodes in one bucket add 2kS + k^2)."""
    cdef int i, j, k
    cdef int64_t total = 0
    for i in range(m):
        k = 0
        for j in range(m):
            if buckets[j] == buckets[i]:
                if j < i:
                    k = -1
                    break
                k += 1
        if k > 0:
            total += 2 * k * counts[buckets[i]] + k * k
    return total


cdef inline bint _unchanged(int n, const int32_t* span_bucket, const int64_t* bucket_changed,
                            int64_t checked) noexcept nogil:
    """No feasible bucket of the rule changed size at or after time `checked`."""
    cdef int p, q, b
    for p in range(n):
        for q in range(p + 1, n):
            b = span_bucket[p * n + q]
            if b >= 0 and bucket_changed[b] >= checked:
                return False
    return True


cdef inline void _prefetch_buckets(int n, const int32_t* span_bucket, const int64_t* counts,
                                   const int64_t* bucket_changed) noexcept nogil:
    """Request the sizes and change times of a rule's feasible buckets (scattered over tables
    too big for the cache) while the rule before it is evaluated."""
    cdef int p, q, b
    for p in range(n):
        for q in range(p + 1, n):
            b = span_bucket[p * n + q]
            if b >= 0:
                cky_prefetch(&counts[b])
                cky_prefetch(&bucket_changed[b])


def icr_sweep(const int32_t[::1] n_tokens, const int64_t[::1] table_offsets,
              const int32_t[::1] span_bucket, const int64_t[::1] tree_offsets,
              int32_t[::1] tree_spans, const uint8_t[::1] active, int64_t[::1] counts,
              int64_t[::1] clock, int64_t[::1] bucket_changed, int64_t[::1] rule_checked):
    """One sweep over all rules, in place. Returns the number of rules re-bracketed.

    `clock` (one value), `bucket_changed` and `rule_checked` carry over from sweep to sweep
    (decoder.binarize.icr.SpanTables): a rule is evaluated only if one of its feasible buckets
    changed size at or after its last evaluation (its choice depends on nothing else), which
    after the first sweeps is a small part of the rules."""
    cdef Py_ssize_t n_rules = n_tokens.shape[0]
    cdef Py_ssize_t i
    cdef int n, m, j
    cdef int64_t base, lo, now = clock[0]
    cdef Py_ssize_t ahead
    cdef int changed = 0
    cdef int64_t* best = <int64_t*> malloc(MAX_TOKENS * MAX_TOKENS * sizeof(int64_t))
    cdef int32_t* split_at = <int32_t*> malloc(MAX_TOKENS * MAX_TOKENS * sizeof(int32_t))
    cdef int32_t new_codes[MAX_TOKENS]
    cdef int32_t old_buckets[MAX_TOKENS]
    cdef int32_t new_buckets[MAX_TOKENS]
    cdef bint same
    if bucket_changed.shape[0] != counts.shape[0] or rule_checked.shape[0] != n_rules or clock.shape[0] != 1:
        free(best); free(split_at)
        raise ValueError("bucket_changed, rule_checked and clock must have one value per bucket, per rule and one")
    if best == NULL or split_at == NULL:
        free(best); free(split_at)
        raise MemoryError()
    for i in range(n_rules):
        n = n_tokens[i]
        if n > MAX_TOKENS:
            free(best); free(split_at)
            raise ValueError(f"rule {i} has {n} source tokens; the ICR kernel handles at most {MAX_TOKENS}")
    with nogil:
        for i in range(n_rules):
            if not active[i]:
                continue
            ahead = i + 1
            while ahead < n_rules and not active[ahead]:
                ahead += 1
            if ahead < n_rules:
                _prefetch_buckets(n_tokens[ahead], &span_bucket[table_offsets[ahead]], &counts[0],
                                  &bucket_changed[0])
            n = n_tokens[i]
            base = table_offsets[i]
            now += 1
            if rule_checked[i] > 0 and _unchanged(n, &span_bucket[base], &bucket_changed[0], rule_checked[i]):
                continue
            rule_checked[i] = now
            lo = tree_offsets[i]
            m = <int>(tree_offsets[i + 1] - lo)
            for j in range(m):
                old_buckets[j] = span_bucket[base + tree_spans[lo + j]]
                counts[old_buckets[j]] -= 1
            if cky_cheapest(n, &span_bucket[base], &counts[0], best, split_at, new_codes) < 0:
                for j in range(m):
                    counts[old_buckets[j]] += 1
                continue
            same = True
            for j in range(m):
                new_buckets[j] = span_bucket[base + new_codes[j]]
            for j in range(m):
                if not _contains(new_codes, m, tree_spans[lo + j]):
                    same = False
                    break
            if not same and exact_increase(m, new_buckets, &counts[0]) < exact_increase(m, old_buckets, &counts[0]):
                for j in range(m):
                    tree_spans[lo + j] = new_codes[j]
                    counts[new_buckets[j]] += 1
                    bucket_changed[old_buckets[j]] = now
                    bucket_changed[new_buckets[j]] = now
                changed += 1
            else:
                for j in range(m):
                    counts[old_buckets[j]] += 1
    free(best)
    free(split_at)
    clock[0] = now
    return changed


cdef inline bint _contains(const int32_t* values, int m, int32_t x) noexcept nogil:
    cdef int j
    for j in range(m):
        if values[j] == x:
            return True
    return False
