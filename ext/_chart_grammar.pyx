"""The grammar arrays ChartSearch reads, prepared once per decoder (decoder/search/grammar_arrays.py calls
these through decoder._ext._chart, which re-exports them): each rule's target hash for the LM cache, the
binary keys with their rules side by side (PairKey), the wide left symbols and their keys by right symbol
(WideRules), each key's rules sorted best first, and each rule's LM estimate."""
import numpy as np

from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._chart_containers cimport CkySortEntry, cky_mix, cky_popcount64, cky_sort_entries
from decoder._ext._kenlm cimport Model, WordIndex
from decoder._ext._lm cimport LanguageModel, score_word_ids


def target_hashes(targets, offsets):
    """uint64[R]: a hash of each rule's target side (KenLM ids and block references), for the LM cache."""
    cdef const int32_t[::1] t = np.ascontiguousarray(targets, dtype=np.int32)
    cdef const int64_t[::1] o = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef Py_ssize_t n_rules = o.shape[0] - 1, r
    cdef int64_t k
    out = np.empty(n_rules, dtype=np.uint64)
    cdef uint64_t[::1] view = out
    cdef uint64_t h
    with nogil:
        for r in range(n_rules):
            h = cky_mix(<uint64_t>0x44222325, <uint64_t>(o[r + 1] - o[r]))
            for k in range(o[r], o[r + 1]):
                h = cky_mix(h, <uint64_t>(<int64_t>t[k] + 0x5E3779B1))
            view[r] = h
    return out


# The left symbols with the most binary keys (at most this many: the bits of a uint64, and more than
# WIDE_MIN_KEYS keys each; on the Bible system these 64 hold 41% of the keys and make 98% of the
# look-ups of right symbols among a left symbol's keys) are "wide": every symbol has a mask of the
# wide left symbols it is the right child of, and their keys are listed by right symbol (wide_rules).
MAX_WIDE_LEFT_SYMBOLS = WIDE_BITS
WIDE_MIN_KEYS = 8


# The numpy dtypes of the records ChartSearch reads (PairKey, WideRules, declared once in _chart_grammar.pxd), from the
# structs themselves: their field names, types and offsets as Cython's buffer format gives them.
cdef PairKey _pair_key_example
cdef WideRules _wide_rules_example
PAIR_KEY_DTYPE = np.asarray(<PairKey[:1]>&_pair_key_example).dtype
WIDE_RULES_DTYPE = np.asarray(<WideRules[:1]>&_wide_rules_example).dtype


def record_offsets():
    """{struct: {field: byte offset, "size": bytes}} of PairKey and WideRules as the C compiler lays them out
    (for tests of PAIR_KEY_DTYPE and WIDE_RULES_DTYPE)."""
    cdef size_t pair = <size_t>&_pair_key_example, wide = <size_t>&_wide_rules_example
    return {"PairKey": {"right": <size_t>&_pair_key_example.right - pair,
                        "rules_lo": <size_t>&_pair_key_example.rules_lo - pair, "size": sizeof(PairKey)},
            "WideRules": {"rules_lo": <size_t>&_wide_rules_example.rules_lo - wide,
                          "n_rules": <size_t>&_wide_rules_example.n_rules - wide, "size": sizeof(WideRules)}}


def pair_right_keys(pair_keys, pair_offsets, int64_t n_symbols):
    """ChartSearch's binary keys (a PAIR_KEY_DTYPE array, one entry per key of pair_keys and a last
    one): each key's right child (key % n_symbols) and the start of its rules in pair_rules_sorted
    (pair_offsets), side by side, so that a key found is its rules too; the last entry holds the end
    of the last key's rules (right -1)."""
    keys = np.asarray(pair_keys, dtype=np.int64)
    offsets = np.asarray(pair_offsets, dtype=np.int64)
    if len(offsets) != len(keys) + 1:
        raise ValueError(f"{len(keys)} pair keys need {len(keys) + 1} offsets, not {len(offsets)}")
    if n_symbols >= 2 ** 31 or (len(offsets) and offsets[-1] >= 2 ** 31):
        raise ValueError("pair_right_keys holds symbols and rule offsets below 2**31")
    out = np.empty(len(keys) + 1, dtype=PAIR_KEY_DTYPE)
    out["right"][:-1] = keys % max(n_symbols, 1)
    out["right"][-1] = -1
    out["rules_lo"] = offsets
    return out


def wide_left_symbols(pair_left_offsets, int64_t max_symbols=MAX_WIDE_LEFT_SYMBOLS, int64_t min_keys=WIDE_MIN_KEYS):
    """int32[<= max_symbols]: the left symbols with the most keys (more than min_keys; ties: lower
    symbol first), most keys first (pair_left_offsets: each left symbol's range of pair_keys)."""
    counts = np.diff(np.asarray(pair_left_offsets, dtype=np.int64))
    candidates = np.flatnonzero(counts > min_keys)
    order = np.lexsort((candidates, -counts[candidates]))
    return candidates[order[:max_symbols]].astype(np.int32)


def pair_key_index(pair_keys, pair_offsets, pair_left_offsets, int64_t n_symbols, wide_symbols):
    """What ChartSearch needs to combine a wide left symbol (wide_symbols: at most 64 symbols) with a
    cell's right symbols: symbol_wide_bit (int8[n_symbols]: each wide symbol's index in wide_symbols,
    -1 for the others), symbol_right_mask (uint64[n_symbols]: bit k set when (wide_symbols[k], symbol)
    is a key with rules), and those keys' ranges of pair_rules_sorted (pair_offsets) by right symbol:
    wide_rules (a WIDE_RULES_DTYPE array) holds symbol b's from symbol_wide_offset[b] (int64[n_symbols
    + 1]) in the order of the bits of its mask, so that key (wide_symbols[k], b) is at
    symbol_wide_offset[b] + popcount(mask[b] & (2**k - 1)): the keys of one right symbol side by side,
    which every wide symbol meeting it reads."""
    cdef const int64_t[::1] keys = np.ascontiguousarray(pair_keys, dtype=np.int64)
    cdef const int64_t[::1] offsets = np.ascontiguousarray(pair_offsets, dtype=np.int64)
    cdef const int64_t[::1] left = np.ascontiguousarray(pair_left_offsets, dtype=np.int64)
    cdef const int32_t[::1] wide = np.ascontiguousarray(wide_symbols, dtype=np.int32)
    if wide.shape[0] > MAX_WIDE_LEFT_SYMBOLS:
        raise ValueError(f"at most {MAX_WIDE_LEFT_SYMBOLS} wide left symbols, not {wide.shape[0]}")
    symbol_wide_bit = np.full(n_symbols, -1, dtype=np.int8)
    symbol_right_mask = np.zeros(n_symbols, dtype=np.uint64)
    cdef int8_t[::1] bit_view = symbol_wide_bit
    cdef uint64_t[::1] mask_view = symbol_right_mask
    cdef Py_ssize_t k, q
    cdef int32_t a
    for k in range(wide.shape[0]):
        a = wide[k]
        if a < 0 or a >= n_symbols or bit_view[a] >= 0:
            raise ValueError(f"wide left symbol {a}: not a symbol below {n_symbols}, or repeated")
        bit_view[a] = <int8_t>k
    with nogil:
        for k in range(wide.shape[0]):
            a = wide[k]
            for q in range(left[a], left[a + 1]):
                if offsets[q + 1] > offsets[q]:
                    mask_view[keys[q] - <int64_t>a * n_symbols] |= (<uint64_t>1) << k
    # the same keys by right symbol: symbol b's keys with rules of the wide symbols whose bits its mask has, in
    # bit order, from symbol_wide_offset[b] in wide_rules; (wide bit k, b) is at symbol_wide_offset[b] +
    # popcount(mask[b] & (2**k - 1))
    symbol_wide_offset = np.zeros(n_symbols + 1, dtype=np.int64)
    cdef int64_t[::1] offset_view = symbol_wide_offset
    cdef Py_ssize_t b
    for b in range(n_symbols):
        offset_view[b + 1] = offset_view[b] + cky_popcount64(mask_view[b])
    wide_rules = np.zeros(offset_view[n_symbols], dtype=WIDE_RULES_DTYPE)
    cdef WideRules[::1] rules_view = wide_rules
    cdef int64_t right, at
    with nogil:
        for k in range(wide.shape[0]):
            a = wide[k]
            for q in range(left[a], left[a + 1]):
                if offsets[q + 1] <= offsets[q]:
                    continue
                right = keys[q] - <int64_t>a * n_symbols
                at = offset_view[right] + cky_popcount64(mask_view[right] & (((<uint64_t>1) << k) - 1))
                rules_view[at].rules_lo = <int32_t>offsets[q]
                rules_view[at].n_rules = <int32_t>(offsets[q + 1] - offsets[q])
    return dict(symbol_wide_bit=symbol_wide_bit, symbol_right_mask=symbol_right_mask,
                symbol_wide_offset=symbol_wide_offset, wide_rules=wide_rules)


def sort_rules_by_score(rules, offsets, scores, classes=None):
    """The rule ids of each group rules[offsets[i]:offsets[i+1]] reordered best score first; with
    `classes` (int32 per rule id), by class first (ascending), then best score first."""
    cdef const int32_t[::1] rule_ids = np.ascontiguousarray(rules, dtype=np.int32)
    cdef const int64_t[::1] o = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const double[::1] score = np.ascontiguousarray(scores, dtype=np.float64)
    cdef const int32_t[::1] rule_class = np.ascontiguousarray(
        classes if classes is not None else np.zeros(score.shape[0], dtype=np.int32), dtype=np.int32)
    out = np.empty(rule_ids.shape[0], dtype=np.int32)
    cdef int32_t[::1] view = out
    cdef vector[CkySortEntry] entries
    cdef CkySortEntry entry
    cdef Py_ssize_t g, k
    with nogil:
        for g in range(o.shape[0] - 1):
            entries.clear()
            for k in range(o[g], o[g + 1]):
                entry.symbol = rule_class[rule_ids[k]]
                entry.score = score[rule_ids[k]]
                entry.id = rule_ids[k]
                entries.push_back(entry)
            cky_sort_entries(entries.data(), entries.size())
            for k in range(o[g], o[g + 1]):
                view[k] = entries[k - o[g]].id
    return out


def rule_lm_estimates(LanguageModel lm, targets, offsets):
    """float64[R]: each rule's LM estimate, the log10 score of its target words on their own (each
    maximal run of words between block references scored left to right from no context, as
    Moses estimates a target phrase's LM score). Cube pruning orders a key's rules by their score
    plus the weighted estimate, so that the rules it tries first are the likely best once the
    LM is applied. A rule with no words (or only references) has 0."""
    cdef const int32_t[::1] t = np.ascontiguousarray(targets, dtype=np.int32)
    cdef const int64_t[::1] o = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef Py_ssize_t n_rules = o.shape[0] - 1, r
    cdef int64_t k, start
    cdef const Model *model = lm.model
    out = np.zeros(n_rules, dtype=np.float64)
    cdef double[::1] view = out
    cdef double total
    with nogil:
        for r in range(n_rules):
            total = 0.0
            k = o[r]
            while k < o[r + 1]:
                if t[k] < 0:
                    k += 1
                    continue
                start = k
                while k < o[r + 1] and t[k] >= 0:
                    k += 1
                total += score_word_ids(model, <const WordIndex *>&t[start], k - start, False, False)
            view[r] = total
    return out
