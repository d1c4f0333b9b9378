"""The records of the grammar arrays ChartSearch reads (built once per decoder by _chart_grammar's
functions, called from decoder/search/grammar_arrays.py)."""
from libc.stdint cimport int32_t


# A binary rule key as the search reads it (pair_right_keys in _chart_grammar.pyx), sorted by (left, right) as
# pair_keys; the left child is implied by the range (pair_left_offsets) and a last entry closes the
# rules of the last key.
cdef struct PairKey:
    int32_t right
    int32_t rules_lo      # pair_rules_sorted[rules_lo : the next entry's rules_lo]: the key's rules


# The rules of one key (wide left symbol, right symbol) in ChartSearch.wide_rules (pair_key_index in
# _chart_grammar.pyx).
cdef struct WideRules:
    int32_t rules_lo      # pair_rules_sorted[rules_lo : rules_lo + n_rules]
    int32_t n_rules


# The most wide left symbols (the bits of a left mask; MAX_WIDE_LEFT_SYMBOLS).
cdef enum:
    WIDE_BITS = 64
