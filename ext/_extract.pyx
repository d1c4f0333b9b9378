"""Compiled hot loops of `cky extract` (decoder.extract); each has a pure-Python
reference, named in decoder.extract.reference, and tests/test_extract_compiled.py
checks that they agree:

    parse_tree_arrays      parse_tree_reference (trees.py)
    parse_alignment_links  parse_alignment_reference (alignment.py)
    frontier_arrays        spans (alignment.py; bit sets of 64-bit words here)
    extract_sentence       extract_occurrences_reference (rules.extract_rules + scoring.rule_fields)
    count_sentence         count_occurrences_reference
    lexical_weights        scoring.lexical_weights
    merge_by_target        scoring.merge_by_target
    table_lines            scoring.table_lines

Rule extraction gives the same rules as the pure-Python reference `decoder.extract.rules.extract_rules`
followed by `decoder.extract.scoring.rule_fields` (tests check that they agree),
built without a tree walk per rule: each frontier node's minimal rule is kept
as three item lists (target side, source side, tree tokens) in which a slot is
the frontier node it cuts; a composed rule is the minimal rule at its root
with the expanded slots replaced, recursively, by their own items.

Item encodings: a target or source word is -(index + 1), a slot is its node
id (>= 0). Tree tokens are node * 4 + kind, kind OPEN, CLOSE, WORD or SLOT.
"""
from bisect import bisect_right

from cpython.unicode cimport Py_UNICODE_ISSPACE
from libc.math cimport exp
from libc.stdint cimport uint64_t
from libc.stdio cimport snprintf
from libc.stdlib cimport free, malloc
from libc.string cimport memset

cdef enum:
    OPEN = 0
    CLOSE = 1
    WORD = 2
    SLOT = 3

# "i-j" strings of alignment links, made once
cdef dict _LINK_TEXT = {}


cdef inline str _link_text(int i, int j):
    cdef long key = (<long>i << 20) | j
    text = _LINK_TEXT.get(key)
    if text is None:
        text = f"{i}-{j}"
        _LINK_TEXT[key] = text
    return <str>text


cdef class _IntList:
    """A growable int array."""
    cdef int *data
    cdef int size
    cdef int capacity

    def __cinit__(self, int capacity=64):
        self.data = <int *>malloc(capacity * sizeof(int))
        self.size = 0
        self.capacity = capacity
        if self.data == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.data)

    cdef inline void clear(self):
        self.size = 0

    cdef int append(self, int value) except -1:
        cdef int *grown
        if self.size == self.capacity:
            grown = <int *>malloc(2 * self.capacity * sizeof(int))
            if grown == NULL:
                raise MemoryError()
            for k in range(self.size):
                grown[k] = self.data[k]
            free(self.data)
            self.data = grown
            self.capacity *= 2
        self.data[self.size] = value
        self.size += 1
        return 0


cdef class _Sentence:
    """C arrays of one sentence pair's tree and alignment graph, and the minimal rules' items."""
    cdef int n_nodes
    cdef int *child_start
    cdef int *child_list
    cdef char *is_word
    cdef char *frontier
    cdef char *expanded
    cdef int *word_index
    cdef int *lo
    cdef int *hi
    cdef int *link_start  # per target word, into link_list: the source positions aligned to it
    cdef int *link_list
    cdef int *source_position  # sentence position -> position in the rule being built
    cdef int *slot_source_position  # node -> source position of the slot in the rule being built
    # per frontier node: ranges into the item pools
    cdef int *target_begin
    cdef int *target_end
    cdef int *source_begin
    cdef int *source_end
    cdef int *tree_begin
    cdef int *tree_end
    cdef _IntList target_items
    cdef _IntList source_items
    cdef _IntList tree_items
    # the rule being built
    cdef _IntList out_target
    cdef _IntList out_source
    cdef _IntList out_tree
    cdef _IntList links
    cdef _IntList nt_links
    cdef list source_words
    cdef list target_words  # by node id (words only)
    cdef list slot_token  # by node id: "[X][LABEL]"
    cdef list lhs_token  # by node id: "[LABEL]"
    cdef list open_token  # by node id: " [LABEL"
    cdef list tree_slot_token  # by node id: " [LABEL]"
    cdef list tree_word_token  # by node id: " word"
    cdef list word_nodes  # sentence position -> node id of the target word

    def __cinit__(self, tree, graph):
        cdef int n = len(tree.label)
        cdef int n_source = graph.n_source
        cdef int n_target = len(tree.word_node)
        cdef int node, k, total
        self.n_nodes = n
        children = tree.children
        total = 0
        for kids in children:
            total += len(kids)
        self.child_start = <int *>malloc((n + 1) * sizeof(int))
        self.child_list = <int *>malloc((total + 1) * sizeof(int))
        self.is_word = <char *>malloc(n)
        self.frontier = <char *>malloc(n)
        self.expanded = <char *>malloc(n)
        self.word_index = <int *>malloc(n * sizeof(int))
        self.lo = <int *>malloc(n * sizeof(int))
        self.hi = <int *>malloc(n * sizeof(int))
        self.slot_source_position = <int *>malloc(n * sizeof(int))
        self.target_begin = <int *>malloc(n * sizeof(int))
        self.target_end = <int *>malloc(n * sizeof(int))
        self.source_begin = <int *>malloc(n * sizeof(int))
        self.source_end = <int *>malloc(n * sizeof(int))
        self.tree_begin = <int *>malloc(n * sizeof(int))
        self.tree_end = <int *>malloc(n * sizeof(int))
        self.source_position = <int *>malloc((n_source + 1) * sizeof(int))
        self.link_start = <int *>malloc((n_target + 1) * sizeof(int))
        target_links = graph.target_links
        total = 0
        for js in target_links:
            total += len(js)
        self.link_list = <int *>malloc((total + 1) * sizeof(int))
        if (self.child_start == NULL or self.child_list == NULL or self.is_word == NULL
                or self.frontier == NULL or self.expanded == NULL or self.word_index == NULL
                or self.lo == NULL or self.hi == NULL or self.slot_source_position == NULL
                or self.target_begin == NULL or self.target_end == NULL or self.source_begin == NULL
                or self.source_end == NULL or self.tree_begin == NULL or self.tree_end == NULL
                or self.source_position == NULL or self.link_start == NULL or self.link_list == NULL):
            raise MemoryError()

        is_word = tree.is_word
        word_index = tree.word_index
        frontier = graph.frontier
        lo = graph.lo
        hi = graph.hi
        labels = tree.label
        k = 0
        for node in range(n):
            self.child_start[node] = k
            for c in children[node]:
                self.child_list[k] = c
                k += 1
            self.is_word[node] = is_word[node]
            self.frontier[node] = frontier[node]
            self.expanded[node] = 0
            self.word_index[node] = word_index[node]
            self.lo[node] = lo[node]
            self.hi[node] = hi[node]
        self.child_start[n] = k
        k = 0
        for node in range(n_target):
            self.link_start[node] = k
            for i in sorted(target_links[node]):
                self.link_list[k] = i
                k += 1
        self.link_start[n_target] = k

        self.source_words = graph.source_words
        self.target_words = labels
        self.slot_token = [None] * n
        self.lhs_token = [None] * n
        self.open_token = [None] * n
        self.tree_slot_token = [None] * n
        self.tree_word_token = [None] * n
        for node in range(n):
            label = labels[node]
            if is_word[node]:
                self.tree_word_token[node] = " " + label
            else:
                self.slot_token[node] = f"[X][{label}]"
                self.lhs_token[node] = f"[{label}]"
                self.open_token[node] = " [" + label
                self.tree_slot_token[node] = f" [{label}]"
        self.target_items = _IntList(256)
        self.source_items = _IntList(256)
        self.tree_items = _IntList(512)
        self.out_target = _IntList()
        self.out_source = _IntList()
        self.out_tree = _IntList()
        self.links = _IntList()
        self.nt_links = _IntList()

    def __dealloc__(self):
        free(self.child_start)
        free(self.child_list)
        free(self.is_word)
        free(self.frontier)
        free(self.expanded)
        free(self.word_index)
        free(self.lo)
        free(self.hi)
        free(self.slot_source_position)
        free(self.target_begin)
        free(self.target_end)
        free(self.source_begin)
        free(self.source_end)
        free(self.tree_begin)
        free(self.tree_end)
        free(self.source_position)
        free(self.link_start)
        free(self.link_list)

    cdef int _walk(self, int node, int distance, list slots, list distances) except -1:
        """Minimal-rule items of the fragment below node; returns Moses' depth of node."""
        cdef int k, c, depth, deepest = 0
        cdef int first = self.child_start[node]
        cdef int last = self.child_start[node + 1]
        self.tree_items.append(node * 4 + OPEN)
        for k in range(first, last):
            c = self.child_list[k]
            if self.is_word[c]:
                self.target_items.append(-(self.word_index[c] + 1))
                self.tree_items.append(c * 4 + WORD)
            elif self.frontier[c]:
                self.target_items.append(c)
                self.tree_items.append(c * 4 + SLOT)
                slots.append(c)
                distances.append(distance + 1)
            else:
                depth = self._walk(c, distance + 1, slots, distances)
                if depth > deepest:
                    deepest = depth
        self.tree_items.append(node * 4 + CLOSE)
        if last - first == 1 and self.is_word[self.child_list[first]]:
            return 0  # a preterminal
        return deepest + 1

    cdef tuple minimal(self, int root):
        """Record the minimal rule at a frontier node; return (slots, distances, n_symbols, depth)."""
        cdef list slots = []
        cdef list distances = []
        cdef int depth, p, end, k, n_slots, v, a, b
        self.target_begin[root] = self.target_items.size
        self.tree_begin[root] = self.tree_items.size
        depth = self._walk(root, 0, slots, distances)
        self.target_end[root] = self.target_items.size
        self.tree_end[root] = self.tree_items.size
        # source side: slots by the start of their closure (insertion sort: few slots)
        by_position = list(slots)
        n_slots = len(by_position)
        for a in range(1, n_slots):
            v = by_position[a]
            b = a - 1
            while b >= 0 and self.lo[<int>by_position[b]] > self.lo[v]:
                by_position[b + 1] = by_position[b]
                b -= 1
            by_position[b + 1] = v
        self.source_begin[root] = self.source_items.size
        p = self.lo[root]
        end = self.hi[root]
        k = 0
        while p <= end:
            if k < n_slots and p == self.lo[<int>by_position[k]]:
                v = by_position[k]
                self.source_items.append(v)
                p = self.hi[v] + 1
                k += 1
            else:
                self.source_items.append(-(p + 1))
                p += 1
        self.source_end[root] = self.source_items.size
        return slots, distances, self.source_end[root] - self.source_begin[root], depth

    cdef int _expand(self, _IntList pool, int *begin, int *end, int node, _IntList out, bint tree) except -1:
        cdef int k, item, v
        for k in range(begin[node], end[node]):
            item = pool.data[k]
            if tree:
                v = item >> 2
                if (item & 3) == SLOT and self.expanded[v]:
                    self._expand(pool, begin, end, v, out, tree)
                    continue
            elif item >= 0 and self.expanded[item]:
                self._expand(pool, begin, end, item, out, tree)
                continue
            out.append(item)
        return 0

    cdef tuple fields(self, int root, tuple expanded):
        """(source field, target field, nonterminal links, all links, tree) of a rule."""
        cdef int k, item, i, j, t, position, kind, v
        cdef _IntList src = self.out_source
        cdef _IntList tgt = self.out_target
        cdef _IntList tre = self.out_tree
        cdef _IntList links = self.links
        cdef _IntList nt_links = self.nt_links
        for v in expanded:
            self.expanded[v] = 1
        src.clear()
        tgt.clear()
        tre.clear()
        self._expand(self.source_items, self.source_begin, self.source_end, root, src, False)
        self._expand(self.target_items, self.target_begin, self.target_end, root, tgt, False)
        self._expand(self.tree_items, self.tree_begin, self.tree_end, root, tre, True)
        for v in expanded:
            self.expanded[v] = 0

        tokens = []
        for position in range(src.size):
            item = src.data[position]
            if item < 0:
                self.source_position[-item - 1] = position
                tokens.append(self.source_words[-item - 1])
            else:
                self.slot_source_position[item] = position
                tokens.append(self.slot_token[item])
        tokens.append("[X]")
        source_field = " ".join(tokens)

        tokens = []
        links.clear()
        nt_links.clear()
        for t in range(tgt.size):
            item = tgt.data[t]
            if item < 0:
                j = -item - 1
                tokens.append(self.target_words[self._word_node(j)])
                for k in range(self.link_start[j], self.link_start[j + 1]):
                    links.append((self.source_position[self.link_list[k]] << 16) | t)
            else:
                tokens.append(self.slot_token[item])
                links.append((self.slot_source_position[item] << 16) | t)
                nt_links.append((self.slot_source_position[item] << 16) | t)
        tokens.append(self.lhs_token[root])
        target_field = " ".join(tokens)

        _sort(links.data, links.size)
        _sort(nt_links.data, nt_links.size)
        link_field = " ".join([_link_text(links.data[k] >> 16, links.data[k] & 0xFFFF) for k in range(links.size)])
        nt_field = " ".join([_link_text(nt_links.data[k] >> 16, nt_links.data[k] & 0xFFFF)
                             for k in range(nt_links.size)])

        pieces = []
        for k in range(tre.size):
            item = tre.data[k]
            v = item >> 2
            kind = item & 3
            if kind == OPEN:
                pieces.append(self.open_token[v])
            elif kind == CLOSE:
                pieces.append("]")
            elif kind == WORD:
                pieces.append(self.tree_word_token[v])
            else:
                pieces.append(self.tree_slot_token[v])
        tree = "".join(pieces)[1:]
        return source_field, target_field, nt_field, link_field, tree

    cdef inline int _word_node(self, int j):
        return self.word_nodes[j]


cdef void _sort(int *a, int n):
    """Insertion sort (rules have few links)."""
    cdef int i, j, x
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


def extract_sentence(tree, graph, int compose, int max_nonterminals, int max_symbols, int max_depth):
    """Rule occurrences of one sentence pair: a list of (fields, size, n_nonterminals, lhs, n_source_symbols),
    fields as `scoring.rule_fields` gives them, minimal rules first (as `rules.extract_rules`)."""
    cdef _Sentence s = _Sentence(tree, graph)
    s.word_nodes = tree.word_node
    cdef int node, n = s.n_nodes
    cdef list frontier_nodes = [node for node in range(n) if s.frontier[node]]
    cdef list out = []
    cdef dict minimal = {}
    labels = tree.label
    for node in frontier_nodes:
        info = s.minimal(node)
        minimal[node] = info
        out.append((s.fields(node, ()), 1, len(info[0]), labels[node], info[2]))
    if compose <= 1:
        return out
    cdef dict fragments = {}
    for node in reversed(frontier_nodes):
        found = _compose(minimal[node], fragments, compose, max_nonterminals, max_symbols, max_depth)
        fragments[node] = found
        for fragment in found:
            if fragment[1] > 1:
                out.append((s.fields(node, fragment[0]), fragment[1], fragment[2], labels[node], fragment[3]))
    return out


cdef list _compose(tuple info, dict fragments, int compose, int max_nonterminals, int max_symbols,
                   int max_depth):
    """As rules._compose: fragments (expanded, size, n_nonterminals, n_symbols, depth) within the limits."""
    cdef list slots = info[0]
    cdef list distances = info[1]
    cdef int n_symbols = info[2]
    cdef int depth = info[3]
    cdef int k, room, size, syms, d, distance
    cdef list partial = [((), 1, len(slots), n_symbols, depth)]
    cdef list grown, below
    cdef tuple frag, sub
    if n_symbols > max_symbols or depth > max_depth:
        return []
    for k in range(len(slots)):
        below = fragments[slots[k]]
        if not below:
            continue
        distance = distances[k]
        grown = []
        for frag in partial:
            room = compose - <int>frag[1]
            if room <= 0:
                continue
            for sub in below:
                size = sub[1]
                if size > room:
                    continue
                syms = <int>frag[3] - 1 + <int>sub[3]
                d = max(<int>frag[4], distance + <int>sub[4])
                if syms > max_symbols or d > max_depth:
                    continue
                grown.append((frag[0] + (slots[k],) + sub[0], <int>frag[1] + size,
                              <int>frag[2] - 1 + <int>sub[2], syms, d))
        partial.extend(grown)
    return [frag for frag in partial if <int>frag[2] <= max_nonterminals]


def lexical_weights(str source_field, str target_field, str alignment_field, dict t_given_s, dict s_given_t):
    """(lex(t|s), lex(s|t)) of a rule, as `decoder.extract.scoring.lexical_weights` (the reference)."""
    cdef list source = source_field.split()
    cdef list target = target_field.split()
    cdef int n_source = len(source) - 1  # the last token is the LHS
    cdef int n_target = len(target) - 1
    cdef double *target_sum = <double *>malloc((n_target + 1) * sizeof(double))
    cdef int *target_links = <int *>malloc((n_target + 1) * sizeof(int))
    cdef double *source_sum = <double *>malloc((n_source + 1) * sizeof(double))
    cdef int *source_links = <int *>malloc((n_source + 1) * sizeof(int))
    cdef int i, j, k, length, number
    cdef Py_UCS4 ch
    cdef double lex_ts = 1.0, lex_st = 1.0
    if target_sum == NULL or target_links == NULL or source_sum == NULL or source_links == NULL:
        free(target_sum); free(target_links); free(source_sum); free(source_links)
        raise MemoryError()
    try:
        for j in range(n_target):
            target_sum[j] = 0.0
            target_links[j] = 0
        for i in range(n_source):
            source_sum[i] = 0.0
            source_links[i] = 0
        # read "i-j i-j ..." digit by digit
        length = len(alignment_field)
        k = 0
        while k < length:
            number = 0
            ch = alignment_field[k]
            while ch != u'-':
                number = number * 10 + (<int>ch - 48)
                k += 1
                ch = alignment_field[k]
            i = number
            k += 1
            number = 0
            while k < length:
                ch = alignment_field[k]
                if ch == u' ':
                    break
                number = number * 10 + (<int>ch - 48)
                k += 1
            j = number
            k += 1
            s = <str>source[i]
            if s[0] == u'[':  # a nonterminal pair
                continue
            t = <str>target[j]
            target_sum[j] += t_given_s.get((s, t), 0.0)
            target_links[j] += 1
            source_sum[i] += s_given_t.get((s, t), 0.0)
            source_links[i] += 1
        for j in range(n_target):
            t = <str>target[j]
            if t[0] == u'[':
                continue
            if target_links[j]:
                lex_ts *= target_sum[j] / target_links[j]
            else:
                lex_ts *= t_given_s.get((None, t), 0.0)
        for i in range(n_source):
            s = <str>source[i]
            if s[0] == u'[':
                continue
            if source_links[i]:
                lex_st *= source_sum[i] / source_links[i]
            else:
                lex_st *= s_given_t.get((s, None), 0.0)
    finally:
        free(target_sum)
        free(target_links)
        free(source_sum)
        free(source_links)
    return lex_ts, lex_st


def count_sentence(tree, graph, int compose, int max_nonterminals, int max_symbols, int max_depth,
                   dict occurrences, dict lhs, dict nonterminals, dict single_word_labels):
    """Extract a sentence pair's rules and add them to the counts, as `pipeline.count_occurrences`
    does with the reference; return (rules extracted, of which minimal)."""
    cdef list found = extract_sentence(tree, graph, compose, max_nonterminals, max_symbols, max_depth)
    cdef int minimal = 0
    cdef tuple item
    for item in found:
        fields = item[0]
        label = item[3]
        n_nonterminals = item[2]
        occurrences[fields] = occurrences.get(fields, 0) + 1
        lhs[label] = lhs.get(label, 0) + 1
        nonterminals[n_nonterminals] = nonterminals.get(n_nonterminals, 0) + 1
        if <int>item[1] == 1:
            minimal += 1
            if <int>item[4] == 1 and <int>n_nonterminals == 0:
                source_field = <str>(<tuple>fields)[0]
                key = (source_field[:len(source_field) - 4], label)  # "word [X]" -> word
                single_word_labels[key] = single_word_labels.get(key, 0) + 1
    return len(found), minimal


cdef double _E = exp(1.0)


cdef inline str _score_text(double x):
    """'%.6g' % x, as Python formats it."""
    cdef char buffer[32]
    cdef int n = snprintf(buffer, 32, "%.6g", x)
    return buffer[:n].decode("ascii")


cdef str _scores_text(double a, double b, double c, double d, double e, double f, double g, double h):
    """The eight scores, each as '%.6g' % x, space-separated (one C call)."""
    cdef char buffer[256]
    cdef int n = snprintf(buffer, 256, "%.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g", a, b, c, d, e, f, g, h)
    return buffer[:n].decode("ascii")


cdef str _count_text(object c):
    if type(c) is int:
        return str(c)
    return str(int(c)) if c == int(c) else repr(float(c))


def table_lines(list rows, dict lhs_counts, double min_count=0.0, keep=None):
    """As `decoder.extract.scoring.table_lines` (the reference): the stage-3 lines and nonterminal counts."""
    cdef dict source_count = {}
    cdef list lines = []
    cdef dict nonterminals = {}
    cdef tuple row
    cdef str source, target
    cdef double c, c_source, c_target
    cdef int n_words, n_nonterminals
    for row in rows:
        source = row[0]
        source_count[source] = source_count.get(source, 0) + row[4]
    for row in rows:
        source = row[0]
        target = row[1]
        c = row[4]
        if c < min_count:
            continue
        if keep is not None and not keep(source):
            continue
        count_source = source_count[source]
        c_source = count_source
        c_target = row[5]
        lhs = target[target.rindex("[") + 1:len(target) - 1]
        n_words = target.count(" ") - target.count("[X][")
        n_nonterminals = source.count("[X][")
        scores = _scores_text(c / c_source, c / c_target, row[6], row[7], c / <double>lhs_counts[lhs],
                              _E if c <= 1 else 1.0, exp(n_words), _E)
        counts = f"{_count_text(row[5])} {_count_text(count_source)} {_count_text(row[4])}"
        lines.append(f"{source} ||| {target} ||| {scores} ||| {row[2]} ||| {counts} |||  ||| {{{{Tree {row[3]}}}}}")
        nonterminals[n_nonterminals] = nonterminals.get(n_nonterminals, 0) + 1
    return lines, nonterminals


def merge_by_target(list record_lists, list bounds, dict t_given_s, dict s_given_t):
    """As `decoder.extract.scoring.merge_by_target` (the reference), with the lexical tables as dicts."""
    cdef dict counts = {}
    cdef dict best = {}
    cdef dict target_count = {}
    cdef list records, b, parts
    cdef tuple record, key
    for records in record_lists:
        for record in records:
            key = record[:5]
            counts[key] = counts.get(key, 0) + record[5]
    for key, c in counts.items():
        rule = key[:3]
        b = best.get(rule)
        if b is None:
            best[rule] = [c, c, key[3], key[4]]
        else:
            b[0] += c
            if c > b[1] or (c == b[1] and (key[3], key[4]) < (b[2], b[3])):
                b[1] = c
                b[2] = key[3]
                b[3] = key[4]
    for rule, b in best.items():
        target = rule[1]
        target_count[target] = target_count.get(target, 0) + b[0]
    parts = [[] for _ in range(len(bounds) + 1)]
    for rule, b in best.items():
        source = rule[0]
        target = rule[1]
        lex_ts, lex_st = lexical_weights(source, target, b[2], t_given_s, s_given_t)
        (<list>parts[bisect_right(bounds, source)]).append(
            (source, target, b[2], b[3], b[0], target_count[target], lex_ts, lex_st))
    return parts, len(best)


def parse_tree_arrays(str text, escape):
    """Penn tree text -> (label, children, is_word) in preorder, or a str error message.

    As `decoder.extract.trees.parse_tree` (the reference, which also makes the Tree and
    words the errors); `escape` is applied to words containing '|', '[' or ']'."""
    cdef list label = []
    cdef list children = []
    cdef list is_word = []
    cdef list stack = []
    cdef Py_ssize_t n = len(text), i = 0, start
    cdef Py_UCS4 ch
    cdef int node
    cdef bint closed_root = False, special
    while True:
        # next token
        while i < n and Py_UNICODE_ISSPACE(text[i]):
            i += 1
        if i >= n:
            break
        if closed_root:
            return "text after the end of the tree"
        ch = text[i]
        if ch == u'(':
            i += 1
            while i < n and Py_UNICODE_ISSPACE(text[i]):
                i += 1
            if i >= n or text[i] == u')':
                return "empty brackets ()"
            if text[i] == u'(':
                node_label = ""
            else:
                start = i
                while i < n and not (text[i] == u'(' or text[i] == u')' or Py_UNICODE_ISSPACE(text[i])):
                    i += 1
                node_label = text[start:i]
            node = len(label)
            label.append(node_label)
            children.append([])
            is_word.append(False)
            if stack:
                (<list>children[<int>stack[len(stack) - 1]]).append(node)
            elif node != 0:
                return "more than one tree on the line"
            stack.append(node)
        elif ch == u')':
            i += 1
            if not stack:
                return "unbalanced ')'"
            node = stack.pop()
            if not children[node]:
                return f"node ({label[node]}) has no children"
            if not stack:
                closed_root = True
        else:
            start = i
            special = False
            while i < n and not (text[i] == u'(' or text[i] == u')' or Py_UNICODE_ISSPACE(text[i])):
                if text[i] == u'|' or text[i] == u'[' or text[i] == u']':
                    special = True
                i += 1
            if not stack:
                return "word outside any bracket"
            word = text[start:i]
            node = len(label)
            label.append(escape(word) if special else word)
            children.append([])
            is_word.append(True)
            (<list>children[<int>stack[len(stack) - 1]]).append(node)
    if not label:
        return "empty tree"
    if stack:
        return "unbalanced '(': missing ')'"
    return label, children, is_word


def frontier_arrays(list children, list is_word, list word_node, int n_source, list links):
    """(frontier, lo, hi) per node, as `decoder.extract.alignment.spans` (the reference) gives them,
    with spans as bit sets of 64-bit words."""
    cdef int n = len(children)
    cdef int W = (n_source + 63) // 64 if n_source > 0 else 1
    cdef uint64_t *span = <uint64_t *>malloc(n * W * sizeof(uint64_t))
    cdef uint64_t *outside = <uint64_t *>malloc(n * W * sizeof(uint64_t))
    cdef uint64_t *prefix = NULL
    cdef uint64_t *suffix = <uint64_t *>malloc(W * sizeof(uint64_t))
    cdef int node, c, k, w, i, j, n_kids, first, last
    cdef uint64_t bits, mask
    cdef list kids
    cdef bint ok
    if span == NULL or outside == NULL or suffix == NULL:
        free(span); free(outside); free(suffix)
        raise MemoryError()
    frontier = [False] * n
    lo = [-1] * n
    hi = [-1] * n
    try:
        memset(span, 0, n * W * sizeof(uint64_t))
        memset(outside, 0, n * W * sizeof(uint64_t))
        for link in links:
            i = link[0]
            j = link[1]
            node = word_node[j]
            span[node * W + i // 64] |= (<uint64_t>1) << (i % 64)
        for node in range(n - 1, -1, -1):  # children before parents
            for c in <list>children[node]:
                for w in range(W):
                    span[node * W + w] |= span[c * W + w]
        for node in range(n):  # parents before children
            kids = children[node]
            n_kids = len(kids)
            if n_kids == 0:
                continue
            if n_kids == 1:
                c = kids[0]
                for w in range(W):
                    outside[c * W + w] = outside[node * W + w]
                continue
            prefix = <uint64_t *>malloc((n_kids + 1) * W * sizeof(uint64_t))
            if prefix == NULL:
                raise MemoryError()
            for w in range(W):
                prefix[w] = 0
                suffix[w] = 0
            for k in range(n_kids):
                c = kids[k]
                for w in range(W):
                    prefix[(k + 1) * W + w] = prefix[k * W + w] | span[c * W + w]
            for k in range(n_kids - 1, -1, -1):
                c = kids[k]
                for w in range(W):
                    outside[c * W + w] = outside[node * W + w] | prefix[k * W + w] | suffix[w]
                    suffix[w] |= span[c * W + w]
            free(prefix)
            prefix = NULL
        for node in range(n):
            if is_word[node]:
                continue
            first = -1
            last = -1
            for w in range(W):
                bits = span[node * W + w]
                if bits:
                    if first < 0:
                        first = w * 64 + _lowest_bit(bits)
                    last = w * 64 + _highest_bit(bits)
            if first < 0:
                continue
            lo[node] = first
            hi[node] = last
            ok = True
            for w in range(first // 64, last // 64 + 1):
                mask = ~(<uint64_t>0)
                if w == first // 64:
                    mask &= ~(<uint64_t>0) << (first % 64)
                if w == last // 64 and last % 64 < 63:
                    mask &= ((<uint64_t>1) << (last % 64 + 1)) - 1
                if outside[node * W + w] & mask:
                    ok = False
                    break
            frontier[node] = ok
    finally:
        free(span)
        free(outside)
        free(suffix)
        free(prefix)
    return frontier, lo, hi


cdef inline int _lowest_bit(uint64_t x):
    cdef int k = 0
    while not (x & 1):
        x >>= 1
        k += 1
    return k


cdef inline int _highest_bit(uint64_t x):
    cdef int k = -1
    while x:
        x >>= 1
        k += 1
    return k


def parse_alignment_links(str text, int n_source, int n_target):
    """Pharaoh "i-j ..." -> list of (i, j) without repeats, or None when the text is not
    well-formed or out of range (the reference `alignment.parse_alignment` then says why)."""
    cdef Py_ssize_t n = len(text), k = 0
    cdef int i, j, digits
    cdef Py_UCS4 ch
    cdef list links = []
    cdef set seen = None
    while True:
        while k < n and Py_UNICODE_ISSPACE(text[k]):
            k += 1
        if k >= n:
            break
        i = 0
        digits = 0
        while k < n and u'0' <= text[k] <= u'9' and digits < 9:
            i = i * 10 + (<int>text[k] - 48)
            k += 1
            digits += 1
        if digits == 0 or k >= n or text[k] != u'-':
            return None
        k += 1
        j = 0
        digits = 0
        while k < n and u'0' <= text[k] <= u'9' and digits < 9:
            j = j * 10 + (<int>text[k] - 48)
            k += 1
            digits += 1
        if digits == 0 or (k < n and not Py_UNICODE_ISSPACE(text[k])):
            return None
        if i >= n_source or j >= n_target:
            return None
        links.append((i, j))
    if len(set(links)) != len(links):
        return list(dict.fromkeys(links))
    return links
