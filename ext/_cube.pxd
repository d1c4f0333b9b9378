"""Cubes for cube pruning (Chiang 2007): a Group is one cube (rules x left items x right
items, each dimension sorted best first), a Hypothesis one scored corner of it (no module: inline
functions, cimported by _chart and the searches built on ChartSearch). ChartSearch builds a cell's groups
(_add_binary_groups, _add_unary_groups, _build_goal), then pops their corners best first (_cube)."""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._chart_containers cimport cky_append, cky_mix


# Group kinds: what the first dimension of a cube enumerates.
cdef enum:
    GROUP_RULES = 0        # grammar rules (sorted best first)
    GROUP_GLUE_START = 1
    GROUP_GLUE_CONCAT = 2


# The round's score beam of the two-pass search's first pass (cube pruning's _cube; the experimental setting
# first_pass_threshold, the paper's beta): a cell's search (one unary round) stops at a complete pop scoring
# more than `threshold` below the best complete pop so far, before that pop is added (0: off). Never at the
# first pop (pops == 0). best: the best so far, updated here.
cdef inline bint cky_round_stops(double score, int pops, double *best, double threshold) noexcept nogil:
    if pops == 0 or score > best[0]:
        best[0] = score
        return False
    return threshold > 0 and score < best[0] - threshold


# A cube: rules x left items x right items (a run or absent child is a list of one -1).
cdef struct Group:
    int8_t kind
    int32_t symbol        # lhs for GROUP_RULES is per rule; GOAL for glue
    int64_t rules_lo      # into the sorted rule array (pair or single), or -1 for glue
    int32_t n_rules
    int8_t single         # rules come from the single-child (unary/lexical) array
    int32_t left_lo       # into item_lists
    int32_t n_left
    int32_t right_lo
    int32_t n_right
    double fixed_score    # glue: weight * glue value


cdef struct Hypothesis:
    double score
    float lm
    int32_t group
    int32_t rule_rank
    int32_t left_rank
    int32_t right_rank
    int32_t state_offset  # into pending_states
    int16_t n_states
    int32_t lhs
    int32_t rule


cdef inline void append_group(vector[Group] *groups, int8_t kind, int32_t symbol, int64_t rules_lo, int32_t n_rules,
                              int8_t single, int32_t left_lo, int32_t n_left, int32_t right_lo, int32_t n_right,
                              double fixed_score) noexcept nogil:
    """A cube to `groups`, unless one of its dimensions is empty."""
    cdef Group *g
    if n_rules <= 0 or n_left <= 0 or n_right <= 0:
        return
    g = cky_append(groups[0])
    g.kind = kind
    g.symbol = symbol
    g.rules_lo = rules_lo
    g.n_rules = n_rules
    g.single = single
    g.left_lo = left_lo
    g.n_left = n_left
    g.right_lo = right_lo
    g.n_right = n_right
    g.fixed_score = fixed_score


cdef inline uint64_t corner_key(int32_t g, int32_t rule_rank, int32_t left_rank, int32_t right_rank) noexcept nogil:
    """The key of a cube corner in cube pruning's `seen` set (distinct corners must not share one)."""
    return cky_mix(cky_mix(cky_mix(<uint64_t>g, <uint64_t>rule_rank), <uint64_t>left_rank), <uint64_t>right_rank)
