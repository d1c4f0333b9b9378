"""A finished cell's symbols as the binary rules of later cells read them (no module: inline
functions, cimported by _chart). When a cell is finished (ChartSearch._finish_cell), its symbols that
are the left child of some binary key are listed with their range of keys (CellLeftSymbol), and those
that are the right child of some key with rules (CellRightSymbol) are indexed three ways: a 512-bit
filter, an open-addressing table by symbol, and, per wide left symbol, the keys it makes with them
(WideList, found on first use). ChartSearch._add_binary_groups reads them to find, per split point, the
rule keys whose two children are present."""
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t

from decoder._ext._chart_containers cimport cky_popcount64


# A cell's symbols as binary rules read them, listed once when the cell is finished (ascending symbol):
# those that are the left child of some key, with their range of keys ...
cdef struct CellLeftSymbol:
    int64_t keys_lo       # pair_right_keys[keys_lo:keys_hi]: the keys with this left child
    int64_t keys_hi
    int32_t symbol
    int32_t list_lo       # into item_lists (its symbol group's, cell_groups_*)
    int32_t list_n
    int8_t wide_bit       # symbol_wide_bit


# ... and those that are the right child of some key with rules, with their item list.
cdef struct CellRightSymbol:
    uint64_t left_mask    # symbol_right_mask
    int64_t wide_offset   # symbol_wide_offset: its keys with the wide left symbols in wide_rules
    int32_t symbol
    int32_t list_lo       # into item_lists
    int32_t list_n


# One slot of a cell's table of its CellRightSymbols by symbol (ChartSearch.right_slots; open addressing,
# linear probing from right_home_slot): symbol -1 is an empty slot; index: into cell_right_symbols; the
# symbol's item list (the CellRightSymbol's) beside it, so that a key found reads one slot (16 bytes).
cdef struct RightSlot:
    int32_t symbol
    int32_t index
    int32_t list_lo
    int32_t list_n


# The bits of a cell's filter of its right symbols (ChartSearch.right_filters): bit right_filter_bit(symbol)
# is set for each of its CellRightSymbols, so that most keys whose right child is not there are rejected by
# one bit (one cache line per cell) before its table is probed.
cdef enum:
    RIGHT_FILTER_WORDS = 8    # 512 bits


# The keys of one wide left symbol among one cell's CellRightSymbols (ChartSearch.wide_pairs): the key's rules
# (a range of pair_rules_sorted) and the right symbol's item list. Found the first time the wide left symbol
# meets the cell as a right child, read every later time.
cdef struct WidePair:
    int32_t rules_lo
    int32_t n_rules
    int32_t list_lo       # into item_lists
    int32_t list_n


# Where the WidePairs of one (cell, wide bit) are: wide_pairs[lo:lo + n]; lo -1: not found yet.
cdef struct WideList:
    int32_t lo
    int32_t n


cdef inline uint32_t right_home_slot(int32_t symbol, int bits) noexcept nogil:
    """A symbol's home slot in a table of 2 ** bits RightSlots (Fibonacci hashing; 2 <= bits <= 31)."""
    return (<uint32_t>symbol * <uint32_t>2654435769u) >> (32 - bits)


cdef inline int wide_rank(uint64_t mask, int wide_bit) noexcept nogil:
    """The position of wide bit `wide_bit` among the bits of a right symbol's mask (which has it): its
    entry's offset in the symbol's wide_rules."""
    return cky_popcount64(mask & (((<uint64_t>1) << wide_bit) - 1))


cdef inline uint32_t right_filter_bit(int32_t symbol) noexcept nogil:
    """A symbol's bit in a cell's filter of right symbols (RIGHT_FILTER_WORDS * 64 = 512 bits): the top 9
    bits of the product right_home_slot takes its top bits of."""
    return (<uint32_t>symbol * <uint32_t>2654435769u) >> 23


cdef inline bint in_right_filter(const uint64_t *filter, int32_t symbol) noexcept nogil:
    """False if `symbol` is not among the right symbols of the cell whose filter this is (True: it may be)."""
    cdef uint32_t bit = right_filter_bit(symbol)
    return (filter[bit >> 6] >> (bit & 63)) & 1


cdef inline const RightSlot *find_right_entry(const RightSlot *table, int bits, int32_t symbol) noexcept nogil:
    """`symbol`'s slot in its cell's table (_index_right_symbols) of 2 ** bits slots, or NULL if the cell
    has no such right symbol (bits 0: the cell has none)."""
    cdef uint32_t mask, slot
    if bits == 0:
        return NULL
    mask = (1u << bits) - 1
    slot = right_home_slot(symbol, bits)
    while table[slot].symbol != symbol:
        if table[slot].symbol < 0:
            return NULL
        slot = (slot + 1) & mask
    return &table[slot]


cdef inline int find_right_slot(const RightSlot *table, int bits, int32_t symbol) noexcept nogil:
    """Index of `symbol` in cell_right_symbols, through its cell's table (_index_right_symbols) of
    2 ** bits slots, or -1 if the cell has no such right symbol (bits 0: the cell has none)."""
    cdef const RightSlot *found = find_right_entry(table, bits, symbol)
    return found.index if found != NULL else -1
