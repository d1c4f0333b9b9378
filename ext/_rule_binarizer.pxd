"""RuleBinarizer: the per-rule loop of decoder.binarize (see _rule_binarizer.pyx)."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector

from decoder._ext._sequence_index cimport SequenceIndex

# Strategy codes (names in decoder.binarize.strategies.STRATEGIES).
cdef enum:
    MONOLINGUAL = 0
    LEFT = 1
    RIGHT = 2
    RANDOM = 3
    ICR = 4

# A tree reference is a token index (>= 0) or a pool node, -(node + 1). Template
# children use the same encoding with template indices.
cdef enum:
    NO_TREE = -0x40000000  # the permutation is not binarizable (or the rule is dropped)
    NO_CHILD = -0x40000001  # the missing second child of a one-token top rule
    ERROR = -0x40000002  # a Python exception is set

# Symbol kinds (symbol_kind).
cdef enum:
    LABEL_SYMBOL = 0
    RUN_SYMBOL = 1
    VIRTUAL_SYMBOL = 2

# Template flags.
cdef enum:
    TOP = 1  # the rule's top node: LHS label, never shared
    MONOLINGUAL_NODE = 2  # a virtual node that carries its children's blocks (target None)


# A virtual node's key as find_virtual_key looked it up: the key's index, and what the first sight of a
# new key goes on to use (its length, its children's buckets, the bucket and name keys' lengths and hashes).
cdef struct VirtualLookup:
    int key
    int n_key
    int left_bucket
    int right_bucket
    int n_bucket
    uint64_t bucket_hash
    int n_name
    uint64_t name_hash


cdef class RuleBinarizer:

    # Results.
    cdef public list rules  # BinaryRule objects: virtual ones shared, top ones one per source rule
    cdef public list binarizations  # per source rule: indices into `rules`, post-order, top last
    cdef public list bucket_keys  # per source rule: L(v) per node (shared tuples)
    cdef public list not_binarizable  # source rules whose permutation is not binarizable
    cdef dict virtual_names  # once names_by_string: every virtual LHS in `rules` -> the first symbol named so
    cdef public int64_t instances  # sum of the binarizations' lengths

    cdef int strategy
    cdef bint drop_non_binarizable
    cdef object binary_rule_type  # decoder.binarize.BinaryRule

    # Array output (see "Array output" in _rule_binarizer.pyx): no BinaryRule, binarizations or
    # bucket keys; per binary rule a row of integer arrays instead.
    cdef public bint emit_arrays
    cdef public bint label_like_virtual  # a label starts with "<": only the object path reads it
    cdef vector[int32_t] out_lhs  # a symbol id, or for a top rule -1 - its index in lhs_labels
    cdef vector[int32_t] out_child0, out_child1  # symbol ids (canonical); child1 -1 for one child
    cdef vector[int64_t] out_target_offsets
    cdef vector[int32_t] out_target  # target word id >= 0, or -1 - k for carried block k
    cdef vector[uint8_t] out_carries
    cdef vector[int64_t] out_origin
    cdef dict lhs_label_ids  # top rules' LHS label -> index in lhs_labels
    cdef list lhs_labels
    cdef vector[uint8_t] symbol_kind  # symbol id -> LABEL_SYMBOL, RUN_SYMBOL or VIRTUAL_SYMBOL
    cdef vector[int32_t] symbol_canonical  # symbol id -> the first symbol with an equal child object
    cdef vector[int32_t] name_symbol  # name key id -> the first symbol named by it
    cdef SequenceIndex rule_keys  # a virtual rule's (lhs, children, target) as canonical ints -> id
    cdef vector[int32_t] rule_buffer  # a rule key being looked up

    # Table input (use_table): the rules as rows of a decoder.rule_arrays.RuleTableArrays instead
    # of Rule objects; tokens are then interned by word, label and run id, never by string.
    cdef bint from_table
    cdef Py_ssize_t table_rows
    cdef const int32_t[::1] table_lhs, table_source, table_target, table_labels
    cdef const int64_t[::1] table_source_offsets, table_target_offsets, table_label_offsets
    cdef list table_words, table_label_names  # word id -> word, label id -> label
    cdef int64_t row_source, row_target, row_labels  # the current row's offsets
    cdef vector[int32_t] word_symbol  # word id -> symbol of its one-word run, or -1
    cdef vector[int32_t] label_symbol  # label id -> its symbol, or -1
    cdef vector[int32_t] word_target_id  # word id -> its id in target_word_ids, or -1
    cdef vector[int32_t] lhs_label_of  # label id -> its index in lhs_labels, or -1
    cdef SequenceIndex run_keys  # a run of several words (word ids) -> run id
    cdef vector[int32_t] run_symbol  # run id -> symbol
    cdef vector[int32_t] items_buffer  # read_rule's items for read_items

    # Symbols: tokens (labels and terminal runs) and virtual nodes.
    cdef dict token_symbols  # label (str) or terminal run (tuple) -> symbol id
    cdef dict word_symbols  # word -> symbol id of the one-word run (word,): no tuple to build for a lookup
    cdef SequenceIndex virtual_keys  # (left symbol, right symbol, target items as ints) -> key id
    cdef vector[int] key_symbol  # key id -> symbol id
    cdef dict target_word_ids  # target word -> its id in virtual keys
    # Virtual names (see "Names" above virtual_symbol).
    cdef SequenceIndex name_keys  # (bucket, target yield as ints) -> name id
    cdef bint names_by_string  # a token or label can make two name keys spell one name
    cdef dict virtual_index  # BinaryRule -> its index in `rules`; None until two symbols share a child object
    cdef list symbol_child  # symbol id -> the child as a BinaryRule holds it: label, run tuple or virtual name
    cdef vector[int] symbol_bucket  # symbol id -> bucket id of L(v)
    cdef list symbol_rule  # symbol id -> index of its virtual rule in `rules` (-1 for tokens)

    # Buckets: distinct L(v) (tuples of token keys), interned as sequences of key ids.
    cdef dict key_ids  # token key ("[NP]", "会 的") -> key id
    cdef SequenceIndex buckets  # key ids of L(v) -> bucket id
    cdef list bucket_tuples  # bucket id -> L(v)
    cdef vector[int32_t] key_buffer  # a virtual key being looked up
    cdef vector[int32_t] bucket_buffer  # a bucket being looked up
    cdef vector[int32_t] name_buffer  # a name key being looked up
    cdef vector[int64_t] bucket_counts

    # The current rule.
    cdef tuple source
    cdef tuple target
    cdef tuple labels
    cdef int n_tokens, n_slots, n_target
    cdef vector[int] token_slot  # per token: its slot, or -1 for a terminal run
    cdef vector[int] token_start, token_end  # per token: its source positions [start, end)
    cdef vector[int] token_rank  # per token: target rank of its slot, or -1
    cdef vector[int] token_first_slot  # per token: how many slots come before it
    cdef vector[int] token_symbol
    cdef vector[int] slot_rank, slot_target_position
    cdef vector[int] target_slot  # per target position: its slot, or -1 for a word
    cdef vector[int] target_word  # per target position: its word's id once looked up, else -1
    cdef vector[char] absorbed  # per target position: taken by an earlier node's block
    # The bracketing: a pool of internal nodes (children as tree references).
    cdef vector[int] tree_left, tree_right
    cdef vector[int] stack_lo, stack_hi, stack_ref
    cdef vector[char] attached
    cdef vector[char] contiguous, derivable, in_tree  # n_tokens x n_tokens span tables
    cdef vector[int] span_ways  # bracketings of each span, counted up to 2 (bracketing_has_choice)
    # Node templates (post-order, top last); items: >= 0 a carried block, < 0 the word at -(item + 1).
    cdef int n_nodes
    cdef vector[int] node_left, node_right, node_first, node_last, node_lo, node_hi
    cdef vector[int] node_carried, node_flags, node_items_start, node_items_end, node_symbol
    cdef vector[int] items
    cdef vector[int32_t] token_key  # ICR: per token, the bucket id of its key

    # Reading a rule; its bracketing (strategies.py); node templates (rule_shape.node_templates).
    cdef int read_rule(self, rule) except -1
    cdef int read_row(self, Py_ssize_t i) except -1
    cdef int read_input(self, list rules, Py_ssize_t i) except -1
    cdef int read_items(self, const int32_t* source, int n_source, const int32_t* target, int n_target) except -2
    cdef int new_node(self, int left, int right) noexcept
    cdef int monolingual_tree(self) noexcept
    cdef int shift_reduce_tree(self, bint mirrored) noexcept
    cdef int right_tree(self) noexcept
    cdef void compute_span_tables(self) noexcept
    cdef bint bracketing_has_choice(self) noexcept
    cdef int random_tree(self, rng) except ERROR
    cdef int random_subtree(self, int p, int q, rng) except ERROR
    cdef int tree_from_codes(self, const int32_t[::1] codes, int64_t lo, int64_t hi) except ERROR
    cdef int subtree_from_spans(self, int p, int q) except ERROR
    cdef int choose_tree(self, Py_ssize_t rule_index, rng, const int32_t[::1] tree_spans, const int64_t[::1] tree_offsets, const uint8_t[::1] active, bint* synchronous) except ERROR
    cdef int carried(self, int child) noexcept
    cdef int block_lo(self, int child) noexcept
    cdef int block_hi(self, int child) noexcept
    cdef int compute_templates(self, int root, bint synchronous) except -1
    cdef int walk(self, int ref, bint is_top, bint synchronous) except ERROR
    cdef int make_node(self, int left, int right, int first, int last, bint is_top, bint synchronous) except -1
    # Symbols, buckets and virtual names; the binary rules of one source rule.
    cdef int token_bucket(self, str key) except -1
    cdef int concatenated_bucket(self, int left, int right) except -1
    cdef int top_bucket(self, int left, int right) except -1
    cdef int concatenation_in_buffer(self, int left, int right, int n, uint64_t h) except -1
    cdef int intern_token(self, int t) except -1
    cdef int intern_row_token(self, int slot, int start, int end) except -1
    cdef int add_token_symbol(self, token, bint is_label) except -1
    cdef int child_symbol(self, int child) noexcept
    cdef tuple node_children(self, int j)
    cdef tuple node_target(self, int j, Py_ssize_t leading)
    cdef int target_word_id(self, int position) except -1
    cdef int count_names_by_string(self) except -1
    cdef int virtual_symbol(self, int j, int left, int right) except -1
    cdef bint find_virtual_key(self, int j, int left, int right, bint monolingual, VirtualLookup *look) except -1
    cdef int fill_virtual_key(self, int j, int left, int right, bint monolingual) except -1
    cdef int fill_concatenation(self, int left, int right) except -1
    cdef int fill_name_key(self, int j, int n_keys, bint monolingual) except -1
    cdef int share_by_equality(self) except -1
    cdef str virtual_name(self, int j, tuple bucket, bint monolingual)
    cdef int emit_rule(self, Py_ssize_t rule_index, lhs) except -1
    cdef int emit_rule_arrays(self, Py_ssize_t rule_index, lhs) except -1
    cdef int lhs_label(self, Py_ssize_t rule_index, lhs) except -1
    cdef int virtual_symbol_arrays(self, int j, int left, int right) except -1
    cdef int push_target(self, int j) except -1
    # ICR span tables.
    cdef void collect_tree_spans(self, int ref, int32_t* codes, int* count, int* first, int* last) noexcept
    cdef int span_bucket_id(self, SequenceIndex ids, int p, int q) except -1
