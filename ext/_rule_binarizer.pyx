"""The per-rule loop of `binarize`, compiled: RuleBinarizer (declared in _rule_binarizer.pxd).

Per rule: tokens, the strategy's bracketing, node templates, binary rules,
bucket keys. Its pure-Python reference is
decoder.binarize.reference.binarize_reference (built from
rule_shape.node_templates, strategies.*_tree and BinaryGrammarBuilder), and
tests/test_binarize_kernel.py checks that both give identical grammars.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_Check
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_GET_LENGTH, PyUnicode_READ_CHAR

import numpy as np

from decoder._ext._sequence_index cimport SequenceIndex, sequence_hash
from decoder._ext._vector_arrays cimport int32_array, int64_array, uint8_array

#
# A rule is read into C arrays once (its source tokens, the target position and
# rank of each slot), bracketed by its strategy into a small pool of tree nodes,
# and turned into node templates exactly as rule_shape.node_templates does
# (post-order, greedy terminal absorption). Real grammars have too many distinct
# rule shapes for a per-shape cache to pay (about 15,000 per 100,000 generated
# rules), so templates are recomputed per rule: in C that costs less than a
# cache lookup would.
#
# Binary rules are then made with memoization instead of string building: every
# token (a label or a terminal run) and every virtual node gets a symbol id, and
# a virtual node is looked up by (left child id, right child id, target items;
# none for a monolingual node). That key determines the node's binary rule
# completely: its children are the children's symbols, its target is the items,
# and its name is built from the children's buckets and yields plus the items'
# words. So only a key seen for the first time builds a name and a BinaryRule.
# Keys, buckets and names are interned as int sequences in SequenceIndex tables,
# never as Python tuples or strings.
#
# The reference builder shares virtual rules by BinaryRule equality. Two new keys
# can only make equal BinaryRules if two different symbols have the same child
# object (two virtual nodes with one name but different insides, or a label that
# is spelled like a virtual name); until that happens every new key makes a new
# BinaryRule, and the equality index is built only once it does.

# Array output. With emit_arrays, no BinaryRule (nor its children and target tuples), no
# binarization or bucket-key tuple is made: each binary rule is a row of integer arrays (lhs,
# children, target items, carries, origin; `rule_arrays()`), in the order `rules` would have,
# and the only Python objects are one name per distinct virtual symbol (none when its name key
# was seen before) and the tokens' own. Ids are symbol ids made canonical: symbols with equal
# child objects (two virtual symbols of one name) are the first of them, so that two rules are
# equal BinaryRules exactly when their rows (lhs, children, target) are equal, and a virtual
# rule is kept once, as the object path shares it. A label spelled like a virtual name ("<...")
# would be one object with a virtual name; the rows cannot say so, and `label_like_virtual`
# tells the caller to take the object path.

# Strategy names (decoder.binarize.strategies.STRATEGIES) -> codes (_rule_binarizer.pxd).
STRATEGY_CODES = {"monolingual": MONOLINGUAL, "left": LEFT, "right": RIGHT, "random": RANDOM, "icr": ICR}

cdef extern from "Python.h":
    object PyType_GenericAlloc(PyTypeObject* type, Py_ssize_t n_items)
    bint PyObject_IS_GC(object o)
    bint PyObject_GC_IsTracked(object o)
    void PyObject_GC_UnTrack(object o)

# "[k]": how a virtual name writes the span's k-th slot.
cdef tuple SLOT_TEXTS = tuple(f"[{k}]" for k in range(256))


cdef inline void _set_item(tuple t, Py_ssize_t i, value) noexcept:
    """Fill place i of a tuple made by PyTuple_New (which steals a reference)."""
    Py_INCREF(value)
    PyTuple_SET_ITEM(t, i, value)


cdef inline void _set_list_item(list l, Py_ssize_t i, value) noexcept:
    """Fill place i of a list made by PyList_New (which steals a reference)."""
    Py_INCREF(value)
    PyList_SET_ITEM(l, i, value)


cdef inline tuple _acyclic(tuple t):
    """Untrack a tuple whose items are all untracked (strings, ints, such tuples): it cannot be in a
    reference cycle. CPython's collector untracks such tuples when they survive their first
    collection; doing it here spares that collection a walk over millions of them."""
    cdef Py_ssize_t i
    for i in range(PyTuple_GET_SIZE(t)):
        item = <object>PyTuple_GET_ITEM(t, i)
        if PyObject_IS_GC(item) and PyObject_GC_IsTracked(item):
            return t
    PyObject_GC_UnTrack(t)
    return t


cdef inline tuple _concatenation(tuple a, tuple b):
    """a + b, untracked (both hold strings only)."""
    cdef Py_ssize_t n_a = PyTuple_GET_SIZE(a), n_b = PyTuple_GET_SIZE(b), i
    cdef tuple out = PyTuple_New(n_a + n_b)
    for i in range(n_a):
        _set_item(out, i, <object>PyTuple_GET_ITEM(a, i))
    for i in range(n_b):
        _set_item(out, n_a + i, <object>PyTuple_GET_ITEM(b, i))
    PyObject_GC_UnTrack(out)
    return out


cdef inline object _binary_rule(PyTypeObject* binary_rule_type, lhs, tuple children, target, Py_ssize_t origin):
    """BinaryRule(lhs, children, target, origin) made as tuple.__new__ makes it (BinaryRule is a
    NamedTuple, a tuple subclass without a __dict__), without building an argument tuple first.
    Like a plain tuple it holds only its items, so it is untracked when they are."""
    cdef tuple rule = <tuple>PyType_GenericAlloc(binary_rule_type, 4)
    _set_item(rule, 0, lhs)
    _set_item(rule, 1, children)
    _set_item(rule, 2, target)
    _set_item(rule, 3, origin)
    return _acyclic(rule)


cdef inline bint _spells_one_name_token(word):
    """Whether a word keeps virtual names unambiguous (see "Names" in RuleBinarizer)."""
    return (isinstance(word, str) and len(<str>word) > 0 and " " not in <str>word and word != "||"
            and not (<str>word).startswith("["))


cdef inline int node_ref(int node) noexcept nogil:
    return -(node + 1)


cdef inline int node_of(int ref) noexcept nogil:
    return -ref - 1


cdef class RuleBinarizer:
    """Binarizes source rules one at a time into shared tables.

    `binarize_rules` appends to `rules`, `binarizations`, `bucket_keys` and
    `not_binarizable` exactly what BinaryGrammarBuilder and the reference
    `binarize` produce; `bucket_sizes()` gives each bucket's size.
    """

    def __init__(self, str strategy, bint drop_non_binarizable, binary_rule_type, bint emit_arrays=False):
        self.strategy = STRATEGY_CODES[strategy]
        self.emit_arrays = emit_arrays
        self.label_like_virtual = False
        self.lhs_label_ids = {}
        self.lhs_labels = []
        self.rule_keys = SequenceIndex()
        self.out_target_offsets.push_back(0)
        self.drop_non_binarizable = drop_non_binarizable
        if not (issubclass(binary_rule_type, tuple) and len(binary_rule_type._fields) == 4
                and binary_rule_type.__dictoffset__ == 0):
            raise TypeError("binary_rule_type must be a four-field NamedTuple")
        self.binary_rule_type = binary_rule_type
        self.rules = []
        self.binarizations = []
        self.bucket_keys = []
        self.not_binarizable = []
        self.virtual_names = None
        self.name_keys = SequenceIndex()
        self.names_by_string = False
        self.instances = 0
        self.token_symbols = {}
        self.word_symbols = {}
        self.virtual_keys = SequenceIndex()
        self.target_word_ids = {}
        self.virtual_index = None
        self.symbol_child = []
        self.symbol_rule = []
        self.key_ids = {}
        self.buckets = SequenceIndex()
        self.bucket_tuples = []

    def bucket_sizes(self):
        """Sizes of the non-empty buckets (int64 array). Token keys are interned as one-token
        buckets whether or not a node uses them, so some interned buckets are empty."""
        sizes = np.empty(self.bucket_counts.size(), dtype=np.int64)
        cdef int64_t[::1] view = sizes
        cdef size_t b
        for b in range(self.bucket_counts.size()):
            view[b] = self.bucket_counts[b]
        return sizes[sizes > 0]

    # -- reading a rule ------------------------------------------------------

    cdef int read_rule(self, rule) except -1:
        """Tokens of the rule's source side (rule_shape.tokenize_rule) and where its slots sit on the target."""
        source = rule.source
        target = rule.target
        labels = rule.labels
        self.source = source if type(source) is tuple else tuple(source)
        self.target = target if type(target) is tuple else tuple(target)
        self.labels = labels if type(labels) is tuple else tuple(labels)
        cdef Py_ssize_t n_source = PyTuple_GET_SIZE(self.source)
        cdef Py_ssize_t n_target = PyTuple_GET_SIZE(self.target)
        cdef Py_ssize_t position
        cdef object symbol
        self.n_slots = <int>PyTuple_GET_SIZE(self.labels)
        self.items_buffer.resize(n_source + n_target)
        for position in range(n_source):
            symbol = <object>PyTuple_GET_ITEM(self.source, position)
            self.items_buffer[position] = -1 - <int>symbol if PyLong_Check(symbol) else 0
        for position in range(n_target):
            symbol = <object>PyTuple_GET_ITEM(self.target, position)
            if PyLong_Check(symbol):
                if symbol < 0 or symbol >= self.n_slots:
                    raise ValueError(f"rule {rule}: target slot {symbol} out of range")
                self.items_buffer[n_source + position] = -1 - <int>symbol
            else:
                self.items_buffer[n_source + position] = 0
        if self.read_items(&self.items_buffer[0], <int>n_source, &self.items_buffer[n_source], <int>n_target) < 0:
            raise ValueError(f"rule {rule}: a source slot out of range, or an empty source side")
        return 0

    cdef int read_row(self, Py_ssize_t i) except -1:
        """read_rule for row i of the table (use_table): word ids >= 0, slot k as -1 - k."""
        cdef int64_t source = self.table_source_offsets[i], target = self.table_target_offsets[i]
        self.row_source = source
        self.row_target = target
        self.row_labels = self.table_label_offsets[i]
        self.n_slots = <int>(self.table_label_offsets[i + 1] - self.row_labels)
        if self.read_items(&self.table_source[source] if self.table_source_offsets[i + 1] > source else NULL,
                           <int>(self.table_source_offsets[i + 1] - source),
                           &self.table_target[target] if self.table_target_offsets[i + 1] > target else NULL,
                           <int>(self.table_target_offsets[i + 1] - target)) < 0:
            raise ValueError(f"rule {i} of the table: a slot out of range, or an empty source side")
        return 0

    cdef int read_input(self, list rules, Py_ssize_t i) except -1:
        if self.from_table:
            return self.read_row(i)
        return self.read_rule(rules[i])

    cdef int read_items(self, const int32_t* source, int n_source, const int32_t* target, int n_target) except -2:
        """The tokens of a source side and the slots of a target side given as items (slot k as
        -1 - k, anything else a word); -1 if a slot is out of range or the source side empty."""
        cdef int position, n = 0, slot, rank = 0, t, first = 0
        if <int>self.token_slot.size() < n_source:
            self.token_slot.resize(n_source)
            self.token_start.resize(n_source)
            self.token_end.resize(n_source)
            self.token_rank.resize(n_source)
            self.token_first_slot.resize(n_source)
            self.token_symbol.resize(n_source)
            self.token_key.resize(n_source)
        for position in range(n_source):
            if source[position] < 0:
                self.token_slot[n] = -1 - source[position]
                self.token_start[n] = position
                self.token_end[n] = position + 1
                n += 1
            elif n > 0 and self.token_slot[n - 1] == -1:
                self.token_end[n - 1] = position + 1  # a run continues
            else:
                self.token_slot[n] = -1
                self.token_start[n] = position
                self.token_end[n] = position + 1
                n += 1
        self.n_tokens = n
        self.n_target = n_target
        if n == 0:
            return -1
        self.slot_rank.resize(self.n_slots)
        self.slot_target_position.resize(self.n_slots)
        self.target_slot.resize(n_target)
        self.target_word.assign(n_target, -1)
        for position in range(n_target):
            if target[position] < 0:
                slot = -1 - target[position]
                if slot >= self.n_slots:
                    return -1
                self.target_slot[position] = slot
                self.slot_rank[slot] = rank
                self.slot_target_position[slot] = position
                rank += 1
            else:
                self.target_slot[position] = -1
        for t in range(n):
            self.token_first_slot[t] = first
            slot = self.token_slot[t]
            if slot >= 0:
                if slot >= self.n_slots:
                    return -1
                self.token_rank[t] = self.slot_rank[slot]
                first += 1
            else:
                self.token_rank[t] = -1
        return 0

    def use_table(self, table):
        """Read the rules from a decoder.rule_arrays.RuleTableArrays (its rows) instead of Rule
        objects: binarize_rules and icr_tables then take `rules=None`. Only with emit_arrays."""
        if not self.emit_arrays:
            raise ValueError("a RuleBinarizer reads a table's arrays only with emit_arrays=True")
        self.from_table = True
        self.table_source = table.source
        self.table_source_offsets = table.source_offsets
        self.table_target = table.target
        self.table_target_offsets = table.target_offsets
        self.table_labels = table.rule_labels
        self.table_label_offsets = table.label_offsets
        self.table_lhs = table.lhs
        self.table_rows = len(table)
        self.table_words = list(table.words)
        self.table_label_names = list(table.labels)
        self.word_symbol.assign(len(self.table_words), -1)
        self.word_target_id.assign(len(self.table_words), -1)
        self.label_symbol.assign(len(self.table_label_names), -1)
        self.lhs_label_of.assign(len(self.table_label_names), -1)
        self.run_keys = SequenceIndex()

    # -- bracketings (strategies.py) -----------------------------------------

    cdef inline int new_node(self, int left, int right) noexcept:
        self.tree_left.push_back(left)
        self.tree_right.push_back(right)
        return node_ref(<int>self.tree_left.size() - 1)

    cdef int monolingual_tree(self) noexcept:
        """strategies.monolingual_tree: ((0, 1), 2) ..."""
        cdef int t, root = 0
        self.tree_left.clear()
        self.tree_right.clear()
        for t in range(1, self.n_tokens):
            root = self.new_node(root, t)
        return root

    cdef int shift_reduce_tree(self, bint mirrored) noexcept:
        """strategies.left_tree (mirrored: on the reversed tokens, as right_tree uses it).

        Zhang et al. 2006, Algorithm 1, over the nonterminal tokens; each is shifted
        with its unattached neighbouring terminal runs attached (left run first),
        which is what decorating the skeleton's leaves in source order does.
        Tree references are positions in scan order. NO_TREE if not binarizable.
        """
        cdef int n = self.n_tokens, u, t, rank, ref, sp = 0, lo, hi
        self.tree_left.clear()
        self.tree_right.clear()
        if self.n_slots == 0:
            return 0  # a lexical rule is one token
        self.attached.assign(n, 0)
        if <int>self.stack_ref.size() < n:
            self.stack_lo.resize(n)
            self.stack_hi.resize(n)
            self.stack_ref.resize(n)
        for u in range(n):
            rank = self.token_rank[n - 1 - u if mirrored else u]
            if rank < 0:
                continue
            ref = u
            if u >= 1 and self.token_rank[n - u if mirrored else u - 1] < 0 and not self.attached[u - 1]:
                self.attached[u - 1] = 1
                ref = self.new_node(u - 1, ref)
            if u + 1 < n and self.token_rank[n - 2 - u if mirrored else u + 1] < 0 and not self.attached[u + 1]:
                self.attached[u + 1] = 1
                ref = self.new_node(ref, u + 1)
            self.stack_lo[sp] = rank
            self.stack_hi[sp] = rank
            self.stack_ref[sp] = ref
            sp += 1
            while sp >= 2:
                if self.stack_hi[sp - 2] + 1 == self.stack_lo[sp - 1] or self.stack_hi[sp - 1] + 1 == self.stack_lo[sp - 2]:
                    lo = min(self.stack_lo[sp - 2], self.stack_lo[sp - 1])
                    hi = max(self.stack_hi[sp - 2], self.stack_hi[sp - 1])
                    ref = self.new_node(self.stack_ref[sp - 2], self.stack_ref[sp - 1])
                    sp -= 1
                    self.stack_lo[sp - 1] = lo
                    self.stack_hi[sp - 1] = hi
                    self.stack_ref[sp - 1] = ref
                else:
                    break
        return self.stack_ref[0] if sp == 1 else NO_TREE

    cdef int right_tree(self) noexcept:
        """strategies.right_tree: the left tree of the reversed tokens, mirrored back."""
        cdef int root = self.shift_reduce_tree(True), j, left, n = self.n_tokens
        if root == NO_TREE:
            return NO_TREE
        for j in range(<int>self.tree_left.size()):
            left = self.tree_left[j]
            self.tree_left[j] = n - 1 - self.tree_right[j] if self.tree_right[j] >= 0 else self.tree_right[j]
            self.tree_right[j] = n - 1 - left if left >= 0 else left
        return n - 1 - root if root >= 0 else root

    cdef void compute_span_tables(self) noexcept:
        """contiguous[p, q]: the slots of tokens p..q have consecutive target ranks;
        derivable[p, q]: some synchronous bracketing has the span (strategies.feasible_spans)."""
        cdef int n = self.n_tokens, p, q, k, length, lo, hi, count, rank
        self.contiguous.assign(n * n, 0)
        self.derivable.assign(n * n, 0)
        for p in range(n):
            lo = 0x7fffffff
            hi = -1
            count = 0
            for q in range(p, n):
                rank = self.token_rank[q]
                if rank >= 0:
                    lo = min(lo, rank)
                    hi = max(hi, rank)
                    count += 1
                self.contiguous[p * n + q] = count == 0 or hi - lo == count - 1
            self.derivable[p * n + p] = 1
        for length in range(2, n + 1):
            for p in range(0, n - length + 1):
                q = p + length - 1
                if not self.contiguous[p * n + q]:
                    continue
                for k in range(p, q):
                    if self.derivable[p * n + k] and self.derivable[(k + 1) * n + q]:
                        self.derivable[p * n + q] = 1
                        break

    cdef bint bracketing_has_choice(self) noexcept:
        """Whether the derivable spans (compute_span_tables) allow more than one bracketing:
        the number of bracketings per span, counted up to 2."""
        cdef int n = self.n_tokens, p, q, k, length, ways
        self.span_ways.assign(n * n, 0)
        for p in range(n):
            self.span_ways[p * n + p] = 1
        for length in range(2, n + 1):
            for p in range(0, n - length + 1):
                q = p + length - 1
                if not self.derivable[p * n + q]:
                    continue
                ways = 0
                for k in range(p, q):
                    ways += self.span_ways[p * n + k] * self.span_ways[(k + 1) * n + q]
                    if ways >= 2:
                        ways = 2
                        break
                self.span_ways[p * n + q] = ways
        return self.span_ways[n - 1] >= 2

    cdef int random_tree(self, rng) except ERROR:
        """strategies.random_tree: a uniform feasible split top-down, drawn with rng.choice."""
        cdef int n = self.n_tokens
        self.tree_left.clear()
        self.tree_right.clear()
        if n == 1:
            return 0
        self.compute_span_tables()
        if not self.derivable[n - 1]:
            return NO_TREE
        return self.random_subtree(0, n - 1, rng)

    cdef int random_subtree(self, int p, int q, rng) except ERROR:
        cdef int n = self.n_tokens, k = p, m = 0, chosen, left, right
        if p == q:
            return p
        for k in range(p, q):
            if self.derivable[p * n + k] and self.derivable[(k + 1) * n + q]:
                m += 1
        # rng.choice over the split list draws rng._randbelow(len); choosing among
        # range(m) draws the same, and gives the index of the split.
        chosen = rng.choice(range(m))
        for k in range(p, q):
            if self.derivable[p * n + k] and self.derivable[(k + 1) * n + q]:
                if chosen == 0:
                    break
                chosen -= 1
        left = self.random_subtree(p, k, rng)
        right = self.random_subtree(k + 1, q, rng)
        return self.new_node(left, right)

    cdef int tree_from_codes(self, const int32_t[::1] codes, int64_t lo, int64_t hi) except ERROR:
        """rule_shape.tree_from_spans over span codes p * n + q."""
        cdef int n = self.n_tokens
        cdef int64_t c
        self.tree_left.clear()
        self.tree_right.clear()
        self.in_tree.assign(n * n, 0)
        for c in range(lo, hi):
            self.in_tree[codes[c]] = 1
        return self.subtree_from_spans(0, n - 1)

    cdef int subtree_from_spans(self, int p, int q) except ERROR:
        cdef int n = self.n_tokens, k, left
        if p == q:
            return p
        for k in range(p, q):
            if (k == p or self.in_tree[p * n + k]) and (k + 1 == q or self.in_tree[(k + 1) * n + q]):
                left = self.subtree_from_spans(p, k)
                return self.new_node(left, self.subtree_from_spans(k + 1, q))
        raise ValueError(f"spans do not form a bracketing of {p}..{q}")

    cdef int choose_tree(self, Py_ssize_t rule_index, rng, const int32_t[::1] tree_spans,
                         const int64_t[::1] tree_offsets, const uint8_t[::1] active,
                         bint* synchronous) except ERROR:
        """The rule's bracketing as binarize step 1 (and ICR) chooses it; NO_TREE if dropped."""
        cdef int root
        synchronous[0] = False
        if self.strategy == MONOLINGUAL:
            return self.monolingual_tree()
        if self.strategy == RIGHT:
            root = self.right_tree()
        elif self.strategy == RANDOM:
            root = self.random_tree(rng)
        elif self.strategy == ICR and active[rule_index]:
            root = self.tree_from_codes(tree_spans, tree_offsets[rule_index], tree_offsets[rule_index + 1])
        else:  # left, and the rules ICR leaves as they are
            root = self.shift_reduce_tree(False)
        if root == NO_TREE:
            self.not_binarizable.append(rule_index)
            if self.drop_non_binarizable:
                return NO_TREE
            return self.monolingual_tree()
        synchronous[0] = True
        return root

    # -- node templates (rule_shape.node_templates) --------------------------

    cdef inline int carried(self, int child) noexcept:
        if child >= 0:
            return 1 if self.token_rank[child] >= 0 else 0
        return self.node_carried[node_of(child)]

    cdef inline int block_lo(self, int child) noexcept:
        if child >= 0:
            return self.slot_target_position[self.token_slot[child]] if self.token_rank[child] >= 0 else -1
        return self.node_lo[node_of(child)]

    cdef inline int block_hi(self, int child) noexcept:
        if child >= 0:
            return self.slot_target_position[self.token_slot[child]] if self.token_rank[child] >= 0 else -1
        return self.node_hi[node_of(child)]

    cdef int compute_templates(self, int root, bint synchronous) except -1:
        cdef int n = self.n_tokens
        self.n_nodes = 0
        if <int>self.node_left.size() < n:
            self.node_left.resize(n)
            self.node_right.resize(n)
            self.node_first.resize(n)
            self.node_last.resize(n)
            self.node_lo.resize(n)
            self.node_hi.resize(n)
            self.node_carried.resize(n)
            self.node_flags.resize(n)
            self.node_items_start.resize(n)
            self.node_items_end.resize(n)
            self.node_symbol.resize(n)
        self.items.clear()
        self.absorbed.assign(self.n_target, 0)
        self.walk(root, True, synchronous)
        return 0

    cdef int walk(self, int ref, bint is_top, bint synchronous) except ERROR:
        """Templates of subtree `ref` in post-order; returns its template reference."""
        cdef int j, left, right, first, last
        if ref >= 0:
            if is_top:  # a one-token rule
                self.make_node(ref, NO_CHILD, ref, ref, True, synchronous)
            return ref
        j = node_of(ref)
        left = self.walk(self.tree_left[j], False, synchronous)
        right = self.walk(self.tree_right[j], False, synchronous)
        first = left if left >= 0 else self.node_first[node_of(left)]
        last = right if right >= 0 else self.node_last[node_of(right)]
        return node_ref(self.make_node(left, right, first, last, is_top, synchronous))

    cdef int make_node(self, int left, int right, int first, int last, bint is_top,
                       bint synchronous) except -1:
        cdef int j = self.n_nodes, lo, hi, position, child, offset, c, n_children
        cdef int children[2]
        cdef bint found
        children[0] = left
        children[1] = right
        n_children = 1 if right == NO_CHILD else 2
        self.n_nodes += 1
        self.node_left[j] = left
        self.node_right[j] = right
        self.node_first[j] = first
        self.node_last[j] = last
        self.node_items_start[j] = self.node_items_end[j] = <int>self.items.size()
        if is_top:
            # The top rule spells out the whole target side.
            lo = 0
            hi = self.n_target - 1
        elif synchronous:
            lo = 0x7fffffff
            hi = -1
            for c in range(n_children):
                if self.carried(children[c]):
                    lo = min(lo, self.block_lo(children[c]))
                    hi = max(hi, self.block_hi(children[c]))
            if hi < 0:
                raise ValueError("a synchronous node that covers no nonterminal")
            while lo > 0 and self.target_slot[lo - 1] < 0 and not self.absorbed[lo - 1]:
                lo -= 1
            while hi + 1 < self.n_target and self.target_slot[hi + 1] < 0 and not self.absorbed[hi + 1]:
                hi += 1
        else:
            # A monolingual virtual node carries its children's blocks.
            self.node_flags[j] = MONOLINGUAL_NODE
            self.node_carried[j] = self.carried(left) + (self.carried(right) if right != NO_CHILD else 0)
            self.node_lo[j] = self.node_hi[j] = -1
            return j
        for position in range(lo, hi + 1):
            if self.target_slot[position] < 0:
                self.absorbed[position] = 1
        if synchronous:
            # Each child's block is contiguous: one item per child block, words between.
            position = lo
            while position <= hi:
                found = False
                offset = 0
                for c in range(n_children):
                    child = children[c]
                    if self.carried(child):
                        if self.block_lo(child) <= position <= self.block_hi(child):
                            self.items.push_back(offset)
                            position = self.block_hi(child) + 1
                            found = True
                            break
                        offset += self.carried(child)
                if not found:
                    if self.target_slot[position] >= 0:
                        raise AssertionError("a nonterminal outside every child block")
                    self.items.push_back(-(position + 1))
                    position += 1
        else:
            # Top of a monolingual bracketing: the carried blocks are the slots in source order.
            for position in range(lo, hi + 1):
                c = self.target_slot[position]
                self.items.push_back(-(position + 1) if c < 0 else c)
        self.node_items_end[j] = <int>self.items.size()
        self.node_flags[j] = TOP if is_top else 0
        self.node_carried[j] = 1
        self.node_lo[j] = lo
        self.node_hi[j] = hi
        return j

    # -- symbols and buckets -------------------------------------------------

    cdef int token_bucket(self, str key) except -1:
        """Bucket id of the one-token L(v) (key,)."""
        cdef int32_t key_id
        cdef bint added
        found = self.key_ids.get(key)
        if found is None:
            key_id = <int32_t>len(self.key_ids)
            self.key_ids[key] = key_id
        else:
            key_id = found
        cdef int b = self.buckets.find_or_add(&key_id, 1, &added)
        if added:
            self.bucket_tuples.append(_acyclic((key,)))
            self.bucket_counts.push_back(0)
        return b

    cdef int concatenated_bucket(self, int left, int right) except -1:
        """Bucket id of L(left) + L(right), interned as the concatenation of their key ids."""
        cdef int n = self.fill_concatenation(left, right)
        return self.concatenation_in_buffer(left, right, n, sequence_hash(self.bucket_buffer.data(), n))

    cdef int top_bucket(self, int left, int right) except -1:
        """Bucket of a top rule's children: the left child's, or both concatenated (right -1: none)."""
        if right >= 0:
            return self.concatenated_bucket(self.symbol_bucket[left], self.symbol_bucket[right])
        return self.symbol_bucket[left]

    cdef int concatenation_in_buffer(self, int left, int right, int n, uint64_t h) except -1:
        """Bucket id of the n key ids fill_concatenation(left, right) left in bucket_buffer (hash h)."""
        cdef bint added
        cdef int b = self.buckets.find_or_add_hashed(self.bucket_buffer.data(), n, h, &added)
        if added:
            self.bucket_tuples.append(_concatenation(self.bucket_tuples[left], self.bucket_tuples[right]))
            self.bucket_counts.push_back(0)
        return b

    cdef int intern_token(self, int t) except -1:
        """Symbol of token t: its label, or its terminal run (binary_grammar._token_child / _token_key)."""
        cdef int slot = self.token_slot[t], start = self.token_start[t], end = self.token_end[t]
        cdef int symbol = <int>len(self.symbol_child)
        if self.from_table:
            return self.intern_row_token(slot, start, end)
        if slot < 0 and end - start == 1:
            word = <object>PyTuple_GET_ITEM(self.source, start)
            found = self.word_symbols.get(word)
            if found is not None:
                return found
            self.word_symbols[word] = symbol
            self.add_token_symbol(_acyclic((word,)), False)
            return symbol
        if slot >= 0:
            token = <object>PyTuple_GET_ITEM(self.labels, slot)
        else:
            token = _acyclic(self.source[start:end])
        found = self.token_symbols.get(token)
        if found is not None:
            return found
        self.token_symbols[token] = symbol
        self.add_token_symbol(token, slot >= 0)
        return symbol

    cdef int intern_row_token(self, int slot, int start, int end) except -1:
        """intern_token for a table row: symbols by word, label and run id, no dict look-up."""
        cdef int symbol = <int>len(self.symbol_child), i, found, word, label, run
        cdef bint added
        cdef tuple run_words
        if slot >= 0:
            label = self.table_labels[self.row_labels + slot]
            found = self.label_symbol[label]
            if found >= 0:
                return found
            self.label_symbol[label] = symbol
            self.add_token_symbol(self.table_label_names[label], True)
            return symbol
        if end - start == 1:
            word = self.table_source[self.row_source + start]
            found = self.word_symbol[word]
            if found >= 0:
                return found
            self.word_symbol[word] = symbol
            self.add_token_symbol(_acyclic((self.table_words[word],)), False)
            return symbol
        run = self.run_keys.find_or_add(&self.table_source[self.row_source + start], end - start, &added)
        if not added:
            return self.run_symbol[run]
        self.run_symbol.push_back(symbol)
        run_words = PyTuple_New(end - start)
        for i in range(start, end):
            _set_item(run_words, i - start, self.table_words[self.table_source[self.row_source + i]])
        self.add_token_symbol(_acyclic(run_words), False)
        return symbol

    cdef int add_token_symbol(self, token, bint is_label) except -1:
        key = f"[{token}]" if is_label else " ".join(token)
        if is_label and isinstance(token, str) and token.startswith("<"):
            self.label_like_virtual = True
            if not self.emit_arrays:
                self.share_by_equality()  # a label spelled like a virtual name
        if is_label:
            if not isinstance(token, str) or " " in token:
                self.count_names_by_string()
        else:
            for word in token:
                if not _spells_one_name_token(word):
                    self.count_names_by_string()
        cdef int symbol = <int>len(self.symbol_child)
        self.symbol_child.append(token)
        self.symbol_bucket.push_back(self.token_bucket(key))
        self.symbol_kind.push_back(LABEL_SYMBOL if is_label else RUN_SYMBOL)
        if self.emit_arrays:
            self.symbol_canonical.push_back(symbol)
        else:
            self.symbol_rule.append(-1)
        return 0

    cdef inline int child_symbol(self, int child) noexcept:
        return self.token_symbol[child] if child >= 0 else self.node_symbol[node_of(child)]

    cdef tuple node_children(self, int j):
        if self.node_right[j] == NO_CHILD:
            return _acyclic((self.symbol_child[self.child_symbol(self.node_left[j])],))
        return _acyclic((self.symbol_child[self.child_symbol(self.node_left[j])],
                         self.symbol_child[self.child_symbol(self.node_right[j])]))

    cdef tuple node_target(self, int j, Py_ssize_t leading):
        """The node's target items (words and carried-block numbers), after `leading` empty places."""
        cdef int start = self.node_items_start[j], end = self.node_items_end[j], i, item
        cdef tuple out = PyTuple_New(leading + end - start)
        for i in range(start, end):
            item = self.items[i]
            _set_item(out, leading + i - start,
                      <object>PyTuple_GET_ITEM(self.target, -item - 1) if item < 0 else item)
        return out

    cdef int target_word_id(self, int position) except -1:
        """Dense id of the target word at `position` of the current rule (for virtual-node keys)."""
        cdef int word_id = self.target_word[position], table_word
        if word_id >= 0:
            return word_id
        if self.from_table:
            table_word = self.table_target[self.row_target + position]
            word_id = self.word_target_id[table_word]
            if word_id < 0:
                word_id = <int>len(self.target_word_ids)
                self.word_target_id[table_word] = word_id
                word = self.table_words[table_word]
                self.target_word_ids[word] = word_id
                if not _spells_one_name_token(word):
                    self.count_names_by_string()
            self.target_word[position] = word_id
            return word_id
        word = <object>PyTuple_GET_ITEM(self.target, position)
        found = self.target_word_ids.get(word)
        if found is not None:
            word_id = found
        else:
            word_id = <int>len(self.target_word_ids)
            self.target_word_ids[word] = word_id
            if not _spells_one_name_token(word):
                self.count_names_by_string()
        self.target_word[position] = word_id
        return word_id

    # Names. A virtual node's name is a function of its name key: its L(v) and, if it is
    # synchronous, its target yield (words, and slots numbered from the span's first). Equal keys
    # give equal names. Different keys give different names as long as every word is one
    # space-free token that cannot pass for a label key, a slot or the separator
    # (_spells_one_name_token) and every label is space-free: the name then splits back into its
    # key at the spaces. So names are told apart by their keys (an int-sequence lookup), and by
    # string (a dict of every name) only from the first word or label that breaks this.

    cdef int count_names_by_string(self) except -1:
        """From now on tell virtual names apart by string (see "Names")."""
        cdef Py_ssize_t s
        if self.names_by_string:
            return 0
        self.names_by_string = True
        self.virtual_names = {}
        for s in range(<Py_ssize_t>self.symbol_kind.size()):
            if self.symbol_kind[s] == VIRTUAL_SYMBOL:
                self.virtual_names.setdefault(self.symbol_child[s], s)
        return 0

    def virtual_nonterminals(self):
        """How many distinct virtual names the rules have (BinaryGrammar.virtual_symbols())."""
        return len(self.virtual_names) if self.names_by_string else len(self.name_keys)

    cdef int virtual_symbol(self, int j, int left, int right) except -1:
        """Symbol id of virtual node j (children's symbols given), making its rule on first sight
        (find_virtual_key)."""
        cdef bint monolingual = (self.node_flags[j] & MONOLINGUAL_NODE) != 0
        cdef VirtualLookup look
        cdef bint added
        if not self.find_virtual_key(j, left, right, monolingual, &look):
            return self.key_symbol[look.key]
        cdef int symbol = <int>len(self.symbol_child)
        self.key_symbol.push_back(symbol)
        # First sight: the name and rule exactly as BinaryGrammarBuilder.add makes them.
        cdef int bucket = self.concatenation_in_buffer(look.left_bucket, look.right_bucket, look.n_bucket,
                                                       look.bucket_hash)
        self.name_keys.find_or_add_hashed(self.name_buffer.data(), look.n_name, look.name_hash, &added)
        if not added:
            self.share_by_equality()  # two symbols with one name
        name = self.virtual_name(j, self.bucket_tuples[bucket], monolingual)
        target = None if monolingual else _acyclic(self.node_target(j, 0))
        binary = _binary_rule(<PyTypeObject*>self.binary_rule_type, name, self.node_children(j), target, -1)
        if self.names_by_string:
            symbol_id = symbol
            if self.virtual_names.setdefault(name, symbol_id) is not symbol_id:
                self.share_by_equality()  # two symbols with one name
        cdef Py_ssize_t index = len(self.rules)
        if self.virtual_index is None:
            self.rules.append(binary)
        else:
            index = self.virtual_index.setdefault(binary, index)
            if index == len(self.rules):
                self.rules.append(binary)
        self.symbol_child.append(name)
        self.symbol_bucket.push_back(bucket)
        self.symbol_kind.push_back(VIRTUAL_SYMBOL)
        self.symbol_rule.append(index)
        return symbol

    cdef bint find_virtual_key(self, int j, int left, int right, bint monolingual,
                               VirtualLookup *look) except -1:
        """Look up node j's key (children's symbols given), adding it on first sight, with its
        bucket and name keys built (in bucket_buffer and name_buffer) and all three slots
        prefetched before the first look-up: they are in tables too big for the cache. Returns
        True when the key is new (a new virtual symbol); look.key is its index either way."""
        cdef bint added
        look.left_bucket = self.symbol_bucket[left]
        look.right_bucket = self.symbol_bucket[right]
        look.n_key = self.fill_virtual_key(j, left, right, monolingual)
        cdef uint64_t key_hash = self.virtual_keys.prefetch(self.key_buffer.data(), look.n_key)
        look.n_bucket = self.fill_concatenation(look.left_bucket, look.right_bucket)
        look.bucket_hash = self.buckets.prefetch(self.bucket_buffer.data(), look.n_bucket)
        look.n_name = self.fill_name_key(j, look.n_bucket, monolingual)
        look.name_hash = self.name_keys.prefetch(self.name_buffer.data(), look.n_name)
        look.key = self.virtual_keys.find_or_add_hashed(self.key_buffer.data(), look.n_key, key_hash, &added)
        return added

    cdef int fill_virtual_key(self, int j, int left, int right, bint monolingual) except -1:
        """key_buffer = node j's key: left symbol, right symbol, target items (a block number k
        as k, a word as -(word id + 1)). A synchronous node has at least one item (a block), so
        a monolingual node's key is the only kind with two places. Returns its length."""
        cdef int i, item, n_items = 0 if monolingual else self.node_items_end[j] - self.node_items_start[j]
        self.key_buffer.resize(2 + n_items)
        self.key_buffer[0] = left
        self.key_buffer[1] = right
        for i in range(n_items):
            item = self.items[self.node_items_start[j] + i]
            self.key_buffer[2 + i] = item if item >= 0 else -(self.target_word_id(-item - 1) + 1)
        return 2 + n_items

    cdef int fill_concatenation(self, int left, int right) except -1:
        """bucket_buffer = the key ids of L(left) + L(right); returns their number."""
        cdef int n_left = self.buckets.length(left), n_right = self.buckets.length(right), i
        self.bucket_buffer.resize(n_left + n_right)
        cdef const int32_t* items = self.buckets.items(left)
        for i in range(n_left):
            self.bucket_buffer[i] = items[i]
        items = self.buckets.items(right)
        for i in range(n_right):
            self.bucket_buffer[n_left + i] = items[i]
        return n_left + n_right

    cdef int fill_name_key(self, int j, int n_keys, bint monolingual) except -1:
        """name_buffer = node j's name key (see "Names"): the number of keys in L(v), their ids
        (bucket_buffer), and for a synchronous node its target yield (a slot as its number from the
        span's first, a word as -(word id + 1)). Returns its length."""
        cdef int lo = self.node_lo[j], hi = self.node_hi[j], position, slot, i, n = 1 + n_keys
        cdef int base = self.token_first_slot[self.node_first[j]]
        self.name_buffer.resize(n if monolingual else n + hi - lo + 1)
        self.name_buffer[0] = n_keys
        for i in range(n_keys):
            self.name_buffer[1 + i] = self.bucket_buffer[i]
        if not monolingual:
            for position in range(lo, hi + 1):
                slot = self.target_slot[position]
                self.name_buffer[n] = slot - base if slot >= 0 else -(self.target_word_id(position) + 1)
                n += 1
        return n

    cdef int share_by_equality(self) except -1:
        """From now on share virtual rules through a BinaryRule-equality index (see the top of this section)."""
        if self.virtual_index is None:
            self.virtual_index = {rule: i for i, rule in enumerate(self.rules) if rule[3] == -1}
        return 0

    cdef str virtual_name(self, int j, tuple bucket, bint monolingual):
        """"<mono " + " ".join(bucket) + ">", or "<" + " ".join(bucket) + " || " + the target
        yield (slots numbered from the span's first) + ">", made with one join."""
        cdef int lo = self.node_lo[j], hi = self.node_hi[j], position, k, at = 0
        cdef int base = self.token_first_slot[self.node_first[j]]
        cdef Py_ssize_t n_keys = PyTuple_GET_SIZE(bucket)
        cdef list parts = PyList_New(2 * n_keys + (1 if monolingual else 2 * (hi - lo) + 3))
        _set_list_item(parts, at, "<mono " if monolingual else "<")
        at += 1
        for k in range(n_keys):
            if k > 0:
                _set_list_item(parts, at, " ")
                at += 1
            _set_list_item(parts, at, <object>PyTuple_GET_ITEM(bucket, k))
            at += 1
        if not monolingual:
            _set_list_item(parts, at, " || ")
            at += 1
            for position in range(lo, hi + 1):
                if position > lo:
                    _set_list_item(parts, at, " ")
                    at += 1
                k = self.target_slot[position]
                if k < 0 and self.from_table:
                    _set_list_item(parts, at, self.table_words[self.table_target[self.row_target + position]])
                elif k < 0:
                    _set_list_item(parts, at, <object>PyTuple_GET_ITEM(self.target, position))
                elif k - base < PyTuple_GET_SIZE(SLOT_TEXTS):
                    _set_list_item(parts, at, <object>PyTuple_GET_ITEM(SLOT_TEXTS, k - base))
                else:
                    _set_list_item(parts, at, f"[{k - base}]")
                at += 1
        _set_list_item(parts, at, ">")
        return "".join(parts)

    # -- the binary rules of one source rule ----------------------------------

    cdef int emit_rule(self, Py_ssize_t rule_index, lhs) except -1:
        cdef int j, t, left, right, bucket, symbol
        cdef tuple indices = PyTuple_New(self.n_nodes)
        cdef tuple keys = PyTuple_New(self.n_nodes)
        for t in range(self.n_tokens):
            self.token_symbol[t] = self.intern_token(t)
        for j in range(self.n_nodes):
            left = self.child_symbol(self.node_left[j])
            right = self.child_symbol(self.node_right[j]) if self.node_right[j] != NO_CHILD else -1
            if self.node_flags[j] & TOP:
                bucket = self.top_bucket(left, right)
                binary = _binary_rule(<PyTypeObject*>self.binary_rule_type, lhs, self.node_children(j),
                                      _acyclic(self.node_target(j, 0)), rule_index)
                index = len(self.rules)
                self.rules.append(binary)
            else:
                symbol = self.virtual_symbol(j, left, right)
                self.node_symbol[j] = symbol
                bucket = self.symbol_bucket[symbol]
                index = self.symbol_rule[symbol]  # the int object made with the symbol
            self.bucket_counts[bucket] += 1
            _set_item(indices, j, index)
            _set_item(keys, j, self.bucket_tuples[bucket])
        self.binarizations.append(_acyclic(indices))
        self.bucket_keys.append(_acyclic(keys))
        self.instances += self.n_nodes
        if isinstance(lhs, str) and PyUnicode_GET_LENGTH(lhs) > 0 and PyUnicode_READ_CHAR(lhs, 0) == u"<":
            self.label_like_virtual = True
            self.count_names_by_string()
            self.virtual_names.setdefault(lhs, -1)  # a real label that looks virtual counts, as in virtual_symbols()
        return 0

    def binarize_rules(self, list rules, Py_ssize_t start, Py_ssize_t stop, rng=None, tables=None):
        """Binarize rules[start:stop] (in order; `rng` for random, ICR's final `tables` for icr);
        with use_table, rows start..stop-1 of the table (`rules` None)."""
        cdef const int32_t[::1] tree_spans = None
        cdef const int64_t[::1] tree_offsets = None
        cdef const uint8_t[::1] active = None
        cdef Py_ssize_t i
        cdef int root
        cdef bint synchronous
        if self.strategy == ICR:
            tree_spans, tree_offsets, active = tables.tree_spans, tables.tree_offsets, tables.active
        for i in range(start, stop):
            self.read_input(rules, i)
            root = self.choose_tree(i, rng, tree_spans, tree_offsets, active, &synchronous)
            if root == NO_TREE:
                if not self.emit_arrays:
                    self.binarizations.append(())
                    self.bucket_keys.append(())
                continue
            self.compute_templates(root, synchronous)
            if self.from_table:
                self.emit_rule_arrays(i, None)
            elif self.emit_arrays:
                self.emit_rule_arrays(i, (<object>rules[i]).lhs)
            else:
                self.emit_rule(i, (<object>rules[i]).lhs)

    # -- the binary rules of one source rule, as array rows ("Array output") ---

    cdef int emit_rule_arrays(self, Py_ssize_t rule_index, lhs) except -1:
        """emit_rule without objects: a row for the top rule and for each virtual rule seen first."""
        cdef int j, t, left, right, bucket, symbol, label
        for t in range(self.n_tokens):
            self.token_symbol[t] = self.intern_token(t)
        for j in range(self.n_nodes):
            left = self.child_symbol(self.node_left[j])
            right = self.child_symbol(self.node_right[j]) if self.node_right[j] != NO_CHILD else -1
            if self.node_flags[j] & TOP:
                bucket = self.top_bucket(left, right)
                label = self.lhs_label(rule_index, lhs)
                self.out_lhs.push_back(-1 - label)
                self.out_child0.push_back(self.symbol_canonical[left])
                # (not a conditional expression: Cython makes it a reference to its -1)
                if right >= 0:
                    right = self.symbol_canonical[right]
                self.out_child1.push_back(right)
                self.push_target(j)
                self.out_carries.push_back(0)
                self.out_origin.push_back(rule_index)
            else:
                symbol = self.virtual_symbol_arrays(j, left, right)
                self.node_symbol[j] = symbol
                bucket = self.symbol_bucket[symbol]
            self.bucket_counts[bucket] += 1
        self.instances += self.n_nodes
        return 0

    cdef int lhs_label(self, Py_ssize_t rule_index, lhs) except -1:
        """The index in lhs_labels of a top rule's LHS (`lhs`, or with use_table the row's)."""
        cdef int label, table_label = -1
        if self.from_table:
            table_label = self.table_lhs[rule_index]
            label = self.lhs_label_of[table_label]
            if label >= 0:
                return label
            lhs = self.table_label_names[table_label]
        else:
            found = self.lhs_label_ids.get(lhs)
            if found is not None:
                return found
        label = <int>len(self.lhs_labels)
        self.lhs_label_ids[lhs] = label
        self.lhs_labels.append(lhs)
        if table_label >= 0:
            self.lhs_label_of[table_label] = label
        if not isinstance(lhs, str) or (<str>lhs).startswith("<"):
            self.label_like_virtual = True
        return label

    cdef int push_target(self, int j) except -1:
        """Node j's target items as a row of out_target: a word as its id, carried block k as -1 - k."""
        cdef int i, item
        for i in range(self.node_items_start[j], self.node_items_end[j]):
            item = self.items[i]
            self.out_target.push_back(-1 - item if item >= 0 else self.target_word_id(-item - 1))
        self.out_target_offsets.push_back(<int64_t>self.out_target.size())
        return 0

    cdef int virtual_symbol_arrays(self, int j, int left, int right) except -1:
        """virtual_symbol without objects: the symbol of virtual node j, and on first sight of its
        key its canonical id, its name (built only for a name key seen first) and, unless an equal
        rule was emitted before, its rule's row."""
        cdef bint monolingual = (self.node_flags[j] & MONOLINGUAL_NODE) != 0
        cdef VirtualLookup look
        cdef bint added
        if not self.find_virtual_key(j, left, right, monolingual, &look):
            return self.key_symbol[look.key]
        cdef int symbol = <int>self.symbol_kind.size(), canonical = symbol, i
        self.key_symbol.push_back(symbol)
        cdef int bucket = self.concatenation_in_buffer(look.left_bucket, look.right_bucket, look.n_bucket,
                                                       look.bucket_hash)
        cdef int name_id = self.name_keys.find_or_add_hashed(self.name_buffer.data(), look.n_name, look.name_hash,
                                                             &added)
        if added:  # a new name key: a name never built (or, with names_by_string, spelled by another key)
            name = self.virtual_name(j, self.bucket_tuples[bucket], monolingual)
            self.name_symbol.push_back(symbol)
            if self.names_by_string:
                canonical = self.virtual_names.setdefault(name, symbol)
                if canonical < 0:  # a label spelled alike (label_like_virtual is set)
                    canonical = symbol
                elif canonical != symbol:  # an earlier symbol of this name
                    name = self.symbol_child[canonical]
        else:
            canonical = self.symbol_canonical[self.name_symbol[name_id]]
            name = self.symbol_child[canonical]
        self.symbol_child.append(name)
        self.symbol_bucket.push_back(bucket)
        self.symbol_kind.push_back(VIRTUAL_SYMBOL)
        self.symbol_canonical.push_back(canonical)

        # The rule: its key is the node key with the children made canonical, the lhs in front.
        self.rule_buffer.resize(look.n_key + 1)
        self.rule_buffer[0] = canonical
        self.rule_buffer[1] = self.symbol_canonical[left]
        self.rule_buffer[2] = self.symbol_canonical[right]
        for i in range(2, look.n_key):
            self.rule_buffer[i + 1] = self.key_buffer[i]
        self.rule_keys.find_or_add(self.rule_buffer.data(), look.n_key + 1, &added)
        if added:
            self.out_lhs.push_back(canonical)
            self.out_child0.push_back(self.rule_buffer[1])
            self.out_child1.push_back(self.rule_buffer[2])
            if monolingual:
                self.out_target_offsets.push_back(<int64_t>self.out_target.size())
            else:
                self.push_target(j)
            self.out_carries.push_back(monolingual)
            self.out_origin.push_back(-1)
        return symbol

    def rule_arrays(self):
        """The array output (emit_arrays) as a dict of numpy arrays and lists:
        rule_lhs, rule_child0, rule_child1 (int32; see out_lhs), rule_target_offsets (int64),
        rule_target (int32), rule_carries (uint8), rule_origin (int64); symbol_kind (uint8),
        symbol_canonical (int32), symbol_objects (symbol id -> label, run tuple or virtual name),
        lhs_labels, target_words (word id -> word)."""
        if not self.emit_arrays:
            raise ValueError("rule_arrays() needs a RuleBinarizer made with emit_arrays=True")
        return {
            "rule_lhs": int32_array(self.out_lhs),
            "rule_child0": int32_array(self.out_child0),
            "rule_child1": int32_array(self.out_child1),
            "rule_target_offsets": int64_array(self.out_target_offsets),
            "rule_target": int32_array(self.out_target),
            "rule_carries": uint8_array(self.out_carries),
            "rule_origin": int64_array(self.out_origin),
            "symbol_kind": uint8_array(self.symbol_kind),
            "symbol_canonical": int32_array(self.symbol_canonical),
            "symbol_objects": self.symbol_child,
            "lhs_labels": self.lhs_labels,
            "target_words": list(self.target_word_ids),  # a dict keeps insertion (id) order
        }

    # -- ICR span tables -----------------------------------------------------

    cdef void collect_tree_spans(self, int ref, int32_t* codes, int* count, int* first, int* last) noexcept:
        """rule_shape.tree_spans as codes p * n + q, post-order."""
        cdef int p, q, unused
        if ref >= 0:
            first[0] = last[0] = ref
            return
        self.collect_tree_spans(self.tree_left[node_of(ref)], codes, count, first, &unused)
        self.collect_tree_spans(self.tree_right[node_of(ref)], codes, count, &unused, last)
        codes[count[0]] = first[0] * self.n_tokens + last[0]
        count[0] += 1

    cdef int span_bucket_id(self, SequenceIndex ids, int p, int q) except -1:
        """Bucket of tokens p..q for ICR: keyed by the token keys' bucket ids (so equal L(v), equal id)."""
        cdef bint added
        return ids.find_or_add(&self.token_key[p], q - p + 1, &added)

    def icr_tables(self, list rules):
        """Flat CKY span tables for ICR, starting from the left-heavy trees.

        Returns (n_tokens, table_offsets, span_bucket, tree_offsets, tree_spans,
        active, counts, single) as decoder.binarize._iterative_cost_reduction
        wants them; `single` is the constant part of Q from one-token rules.
        Rules whose permutation is not binarizable keep the monolingual tree
        (inactive), or no tree when they are dropped.
        """
        cdef Py_ssize_t n_rules = self.table_rows if self.from_table else len(rules), i
        cdef int n, root, p, q, t, count, first, last, code
        n_tokens_array = np.zeros(n_rules, dtype=np.int32)
        binarizable_array = np.zeros(n_rules, dtype=np.uint8)
        table_offsets_array = np.zeros(n_rules + 1, dtype=np.int64)
        tree_offsets_array = np.zeros(n_rules + 1, dtype=np.int64)
        active_array = np.zeros(n_rules, dtype=np.uint8)
        cdef int32_t[::1] n_tokens = n_tokens_array
        cdef uint8_t[::1] binarizable = binarizable_array
        cdef int64_t[::1] table_offsets = table_offsets_array
        cdef int64_t[::1] tree_offsets = tree_offsets_array
        cdef uint8_t[::1] active = active_array
        # Pass 1: table and tree sizes.
        for i in range(n_rules):
            self.read_input(rules, i)
            n = self.n_tokens
            n_tokens[i] = n
            binarizable[i] = self.shift_reduce_tree(False) != NO_TREE
            table_offsets[i + 1] = table_offsets[i] + n * n
            has_tree = n >= 2 and (binarizable[i] or not self.drop_non_binarizable)
            tree_offsets[i + 1] = tree_offsets[i] + (n - 1 if has_tree else 0)
        span_bucket_array = np.full(table_offsets[n_rules], -1, dtype=np.int32)
        tree_spans_array = np.zeros(tree_offsets[n_rules], dtype=np.int32)
        cdef int32_t[::1] span_bucket = span_bucket_array
        cdef int32_t[::1] tree_spans = tree_spans_array
        cdef SequenceIndex ids = SequenceIndex()
        cdef dict single_sizes = {}
        # Pass 2: bucket ids of the feasible spans, and the current trees.
        for i in range(n_rules):
            n = n_tokens[i]
            if tree_offsets[i + 1] == tree_offsets[i]:
                if n == 1:  # one-token rules sit in buckets no multi-token node shares
                    self.read_input(rules, i)
                    key = self.symbol_bucket[self.intern_token(0)]
                    single_sizes[key] = single_sizes.get(key, 0) + 1
                continue
            self.read_input(rules, i)
            for t in range(n):
                self.token_key[t] = self.symbol_bucket[self.intern_token(t)]
            if binarizable[i]:
                root = self.shift_reduce_tree(False)
                self.compute_span_tables()
                for p in range(n):
                    for q in range(p + 1, n):
                        if self.derivable[p * n + q]:
                            span_bucket[table_offsets[i] + p * n + q] = self.span_bucket_id(ids, p, q)
                # A rule with one feasible bracketing (the left one) cannot change: the sweep
                # would take its nodes out and put the same ones back. It stays inactive.
                active[i] = self.bracketing_has_choice()
            else:
                root = self.monolingual_tree()
            count = 0
            self.collect_tree_spans(root, &tree_spans[tree_offsets[i]], &count, &first, &last)
            if not binarizable[i]:  # the frozen monolingual tree: only its own spans are in the table
                for t in range(count):
                    code = tree_spans[tree_offsets[i] + t]
                    span_bucket[table_offsets[i] + code] = self.span_bucket_id(ids, code // n, code % n)
        rule_of_node = np.repeat(np.arange(n_rules), np.diff(tree_offsets_array))
        node_buckets = span_bucket_array[table_offsets_array[:n_rules][rule_of_node] + tree_spans_array]
        counts = np.bincount(node_buckets, minlength=len(ids)).astype(np.int64)
        single = sum(v * v for v in single_sizes.values())
        return (n_tokens_array, table_offsets_array, span_bucket_array, tree_offsets_array, tree_spans_array,
                active_array, counts, single)
