"""A Moses rule table read straight into integer arrays: RuleTableReader (declared in _rule_reader.pxd).

What decoder.rule_arrays.read_rule_arrays runs: the table's bytes (decompressed by the caller in
large blocks) are cut into lines, and each usual line is read in C into rows of integer arrays
(decoder.rule_arrays.RuleTableArrays): the LHS and nonterminal labels as label ids, the words of
both sides as word ids and the slots as -1 - k, the scores as doubles, the terminal links, the
tree fragment as UTF-8 bytes. No Python object is made per rule; one str per distinct word and
label, at the end.

A line is read here exactly as decoder.grammar.parse_rule reads it (and as the compiled
_rule_table.rule_fields does), or not at all: a line that is not the usual kind (not UTF-8,
whitespace other than spaces and tabs, a number float() reads in another way than strtod, a
malformed rule, nonterminals linked by label, ...) goes to the Python reader the caller gives
(`python_line`: decoder.grammar's reading of one line, which returns the Rule or raises
GrammarFormatError naming file and line), and its Rule is added to the rows. Line numbers count
lines as Python's text files do (universal newlines: "\\n", "\\r\\n" and "\\r" end a line).
tests/test_rule_arrays.py checks both readers row by row.
"""
from libc.math cimport isfinite
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport strtod
from libc.string cimport memchr, memcmp, memcpy
from libcpp.vector cimport vector
from cpython.unicode cimport PyUnicode_DecodeUTF8

import numpy as np

from decoder._ext._sequence_index cimport SequenceIndex
from decoder._ext._vector_arrays cimport float64_array, int32_array, int64_array


cdef inline bint _blank(char c) noexcept nogil:
    return c == b' ' or c == b'\t'


cdef int _utf8_scan(const unsigned char* s, int n, bint* special, bint* blank) noexcept nogil:
    """0 if s[0:n] is UTF-8 as Python decodes it (no overlong forms, surrogates or code points
    above U+10FFFF), else -1. `special`: it holds whitespace other than space and tab (what
    str.split() and str.strip() would treat differently from this reader); `blank`: only spaces
    and tabs."""
    cdef int i = 0
    cdef unsigned int c, c1, c2, c3, cp
    cdef uint64_t word
    special[0] = False
    blank[0] = True
    while i < n:
        # Eight bytes at a time while they are ASCII without control characters (no byte with
        # its high bit set, none below 0x20): the usual case, with nothing to check.
        while i + 8 <= n:
            memcpy(&word, s + i, 8)
            if ((word - 0x2020202020202020ULL) | word) & 0x8080808080808080ULL:
                break
            if word != 0x2020202020202020ULL:
                blank[0] = False
            i += 8
        if i >= n:
            break
        c = s[i]
        if c < 0x80:
            if c != 0x20 and c != 0x09:
                blank[0] = False
                if c == 0x0b or c == 0x0c or (0x1c <= c <= 0x1f) or c == 0x0a or c == 0x0d:
                    special[0] = True
            i += 1
            continue
        blank[0] = False
        if 0xc2 <= c <= 0xdf:
            if i + 1 >= n:
                return -1
            c1 = s[i + 1]
            if (c1 & 0xc0) != 0x80:
                return -1
            cp = ((c & 0x1f) << 6) | (c1 & 0x3f)
            if cp == 0x85 or cp == 0xa0:
                special[0] = True
            i += 2
        elif 0xe0 <= c <= 0xef:
            if i + 2 >= n:
                return -1
            c1 = s[i + 1]
            c2 = s[i + 2]
            if (c1 & 0xc0) != 0x80 or (c2 & 0xc0) != 0x80:
                return -1
            if c == 0xe0 and c1 < 0xa0:
                return -1  # overlong
            if c == 0xed and c1 >= 0xa0:
                return -1  # a surrogate
            cp = ((c & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f)
            if cp == 0x1680 or (0x2000 <= cp <= 0x200a) or cp == 0x2028 or cp == 0x2029 or cp == 0x202f \
                    or cp == 0x205f or cp == 0x3000:
                special[0] = True
            i += 3
        elif 0xf0 <= c <= 0xf4:
            if i + 3 >= n:
                return -1
            c1 = s[i + 1]
            c2 = s[i + 2]
            c3 = s[i + 3]
            if (c1 & 0xc0) != 0x80 or (c2 & 0xc0) != 0x80 or (c3 & 0xc0) != 0x80:
                return -1
            if (c == 0xf0 and c1 < 0x90) or (c == 0xf4 and c1 >= 0x90):
                return -1
            i += 4
        else:
            return -1
    return 0


cdef inline Span _strip(const char* line, Span s) noexcept nogil:
    while s.start < s.end and _blank(line[s.start]):
        s.start += 1
    while s.end > s.start and _blank(line[s.end - 1]):
        s.end -= 1
    return s


cdef void _split(const char* line, Span s, vector[Span]& out) noexcept:
    """The space- or tab-separated tokens of line[s.start:s.end] (str.split() on such a line)."""
    cdef int i = s.start
    cdef Span token
    out.clear()
    while True:
        while i < s.end and _blank(line[i]):
            i += 1
        if i >= s.end:
            return
        token.start = i
        while i < s.end and not _blank(line[i]):
            i += 1
        token.end = i
        out.push_back(token)


cdef inline bint _plain_label(const char* line, int start, int end) noexcept nogil:
    """line[start:end] is a label: non-empty, no brackets."""
    cdef int i
    if end <= start:
        return False
    for i in range(start, end):
        if line[i] == b'[' or line[i] == b']':
            return False
    return True


cdef inline bint _lhs_label(const char* line, Span token, Span* label) noexcept nogil:
    """token is "[LABEL]": its label."""
    if token.end - token.start >= 3 and line[token.start] == b'[' and line[token.end - 1] == b']' \
            and _plain_label(line, token.start + 1, token.end - 1):
        label.start = token.start + 1
        label.end = token.end - 1
        return True
    return False


cdef inline int _nonterminal(const char* line, Span token, Span* label) noexcept nogil:
    """1 for "[A][B]" (label: B), 0 for a word, -1 for a token that starts with "[" without being a
    nonterminal (parse_rule reads it as a word; this reader leaves the line to parse_rule)."""
    cdef int k
    if line[token.start] != b'[':
        return 0
    if line[token.end - 1] != b']':
        return -1
    k = token.start + 1
    while k + 1 < token.end and not (line[k] == b']' and line[k + 1] == b'['):
        k += 1
    if k + 1 >= token.end or not _plain_label(line, token.start + 1, k) \
            or not _plain_label(line, k + 2, token.end - 1):
        return -1
    label.start = k + 2
    label.end = token.end - 1
    return 1


# Powers of ten that are exact doubles (Clinger's fast path).
cdef double[23] EXACT_POWERS_OF_TEN = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
                                       1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]


cdef inline int _digit_run(const char* line, int i, int end, int* significant, uint64_t* mantissa) noexcept nogil:
    """The decimal digits from `i` (an integer or a fraction part): each counts in `significant` from
    the first nonzero digit on, and the first 15 significant ones go into `mantissa`; returns where
    the digits end."""
    cdef int d
    while i < end and b'0' <= line[i] <= b'9':
        d = line[i] - 48
        if significant[0] or d:
            significant[0] += 1
            if significant[0] <= 15:
                mantissa[0] = mantissa[0] * 10 + <uint64_t>d
        i += 1
    return i


cdef inline bint _number(const char* line, Span token, double* value, bint need_value=True) noexcept nogil:
    """A decimal number written [+-]digits[.digits][e[+-]digits] (at least one digit before the
    exponent), finite: what float() and strtod read alike (both round correctly). Anything else
    (inf, nan, "1_0", hexadecimal, ...) is False: parse_rule decides.

    Without an exponent and with at most 15 significant digits the number is an integer
    below 2**53 divided by an exact power of ten, and that one division rounds correctly (Clinger
    1990): the usual scores and counts ("0.781977", "2.71828", "1597") need no strtod. Without
    `need_value` (a count, only checked) a decimal without an exponent is finite as it is."""
    cdef int i = token.start, end = token.end, n = end - token.start
    cdef int digits = 0, fraction = 0, significant = 0, start
    cdef bint negative = False, exponent = False
    cdef uint64_t mantissa = 0
    cdef char buffer[80]
    cdef char* stop
    if n <= 0 or n >= 80:
        return False
    if line[i] == b'+' or line[i] == b'-':
        negative = line[i] == b'-'
        i += 1
    start = i
    i = _digit_run(line, i, end, &significant, &mantissa)
    digits = i - start
    if i < end and line[i] == b'.':
        i += 1
        start = i
        i = _digit_run(line, i, end, &significant, &mantissa)
        fraction = i - start
        digits += fraction
    if digits == 0:
        return False
    if i < end and (line[i] == b'e' or line[i] == b'E'):
        exponent = True
        i += 1
        if i < end and (line[i] == b'+' or line[i] == b'-'):
            i += 1
        if i >= end or not (b'0' <= line[i] <= b'9'):
            return False
        while i < end and b'0' <= line[i] <= b'9':
            i += 1
    if i != end:
        return False
    if not exponent and not need_value:
        return True
    if not exponent and significant <= 15 and fraction <= 22:
        value[0] = <double>mantissa / EXACT_POWERS_OF_TEN[fraction]
        if negative:
            value[0] = -value[0]
        return True
    memcpy(buffer, line + token.start, n)
    buffer[n] = 0
    value[0] = strtod(buffer, &stop)
    return stop == buffer + n and isfinite(value[0])


cdef inline int _ascii_int(const char* line, int start, int end) noexcept nogil:
    """A non-negative decimal of at most 9 ASCII digits, or -1."""
    cdef int i, value = 0
    if end <= start or end - start > 9:
        return -1
    for i in range(start, end):
        if not (b'0' <= line[i] <= b'9'):
            return -1
        value = value * 10 + (line[i] - 48)
    return value


cdef inline int _find(const char* line, int start, int end, const char* needle, int n) noexcept nogil:
    """The first index >= start where needle occurs within line[:end], or -1 (memchr for its
    first byte: the needles are short and their first byte rare)."""
    cdef const char* at = line + start
    cdef const char* stop = line + end - n + 1
    while at < stop:
        at = <const char*>memchr(at, needle[0], stop - at)
        if at == NULL:
            return -1
        if memcmp(at, needle, n) == 0:
            return <int>(at - line)
        at += 1
    return -1


cdef inline bint _same_text(const char* line, Span a, Span b) noexcept nogil:
    return a.end - a.start == b.end - b.start and memcmp(line + a.start, line + b.start, a.end - a.start) == 0


cdef list _strings(SequenceIndex index):
    """The interned byte strings of `index`, decoded, in id order."""
    cdef int i, n = len(index), n_ints
    cdef const int32_t* items
    cdef list out = []
    for i in range(n):
        n_ints = index.length(i)
        items = index.items(i)
        out.append(PyUnicode_DecodeUTF8(<const char*>items, items[n_ints - 1], NULL))
    return out


cdef class RuleTableReader:
    """Feed it the bytes of a table (`feed`), then take its arrays (`arrays`).

    `python_line(text, line_number)` reads a line this reader leaves (the Rule, None for a blank
    line, or GrammarFormatError); `not_utf8(raw, line_number)` raises InputError;
    `score_count_error(n, line_number, n_first, first_line)` raises GrammarFormatError for a rule
    with another number of scores than the first (the scores are one feature matrix)."""

    def __init__(self, path, python_line, not_utf8, score_count_error):
        self.path = path
        self.python_line = python_line
        self.not_utf8 = not_utf8
        self.score_count_error = score_count_error
        self.word_index = SequenceIndex()
        self.label_index = SequenceIndex()
        self.n_scores = -1
        self.first_line = 0
        self.line_number = 0
        self.source_offsets.push_back(0)
        self.target_offsets.push_back(0)
        self.label_offsets.push_back(0)
        self.alignment_offsets.push_back(0)
        self.tree_offsets.push_back(0)

    def __len__(self):
        return self.lhs.size()

    def feed(self, const unsigned char[::1] data not None, bint final):
        """Read the complete lines at the start of `data`; returns how many bytes they take (the
        caller keeps the rest for the next call). With `final`, every byte is read."""
        cdef Py_ssize_t n = data.shape[0], position = 0, end, following
        cdef const char* text = <const char*>&data[0] if n else NULL
        cdef const char* found
        while position < n:
            found = <const char*>memchr(text + position, b'\n', n - position)
            end = n if found == NULL else found - text
            found = <const char*>memchr(text + position, b'\r', end - position)
            if found != NULL:
                end = found - text
            if end == n:
                if not final:
                    break
                following = n
            elif data[end] == b'\r':
                if end + 1 == n and not final:
                    break  # a "\r\n" may be cut between two blocks
                following = end + 2 if end + 1 < n and data[end + 1] == b'\n' else end + 1
            else:
                following = end + 1
            if end - position > 0x3fffffff:
                raise ValueError(f"{self.path}: line {self.line_number + 1} is longer than 1 GiB")
            self.line_number += 1
            self.read_line(text + position, <int>(end - position))
            position = following
        return position

    cdef int read_line(self, const char* line, int length) except -1:
        cdef int kind = self.fast_line(line, length)
        if kind == LINE_RULE or kind == LINE_BLANK:
            return 0
        raw = line[:length]
        if kind == LINE_NOT_UTF8:
            self.not_utf8(raw, self.line_number)
            raise AssertionError("not_utf8 must raise")
        rule = self.python_line(raw.decode("utf-8") + "\n", self.line_number)
        if rule is not None:
            self.add_rule_object(rule)
        return 0

    cdef int fast_line(self, const char* line, int length) except -1:
        """Read the line into the rows if it is the usual kind; say what it is (LINE_*)."""
        cdef bint special, blank
        if _utf8_scan(<const unsigned char*>line, length, &special, &blank) < 0:
            return LINE_NOT_UTF8
        if special:
            return LINE_PYTHON
        if blank:
            return LINE_BLANK

        # Fields, split at "|||" and stripped.
        cdef Span field
        cdef int i = 0, start = 0
        self.fields.clear()
        while True:
            i = _find(line, i, length, b"|||", 3)
            if i < 0:
                break
            field.start = start
            field.end = i
            self.fields.push_back(_strip(line, field))
            i += 3
            start = i
        field.start = start
        field.end = length
        self.fields.push_back(_strip(line, field))
        cdef int n_fields = <int>self.fields.size()
        if n_fields < 3 or n_fields > 7:
            return LINE_PYTHON  # (more than 7: properties with "|||" in them)

        _split(line, self.fields[0], self.source_tokens)
        _split(line, self.fields[1], self.target_tokens)
        cdef int n_source = <int>self.source_tokens.size() - 1, n_target = <int>self.target_tokens.size() - 1
        if n_source < 1 or n_target < 1:
            return LINE_PYTHON
        cdef Span label, lhs
        if not _lhs_label(line, self.source_tokens[n_source], &label):
            return LINE_PYTHON
        if not _lhs_label(line, self.target_tokens[n_target], &lhs):
            return LINE_PYTHON

        cdef double value
        _split(line, self.fields[2], self.numbers)
        self.line_scores.clear()
        for i in range(<int>self.numbers.size()):
            if not _number(line, self.numbers[i], &value):
                return LINE_PYTHON
            self.line_scores.push_back(value)

        # Nonterminals: the source ones are the slots, numbered left to right.
        cdef int kind, n_slots = 0, n_target_nts = 0
        self.source_slot.resize(n_source)
        self.source_linked.assign(n_source, 0)
        self.slot_label.clear()
        for i in range(n_source):
            kind = _nonterminal(line, self.source_tokens[i], &label)
            if kind < 0:
                return LINE_PYTHON
            if kind:
                self.source_slot[i] = n_slots
                self.slot_label.push_back(label)
                n_slots += 1
            else:
                self.source_slot[i] = -1
        self.target_label.resize(n_target)
        self.target_slot.assign(n_target, -1)
        for i in range(n_target):
            kind = _nonterminal(line, self.target_tokens[i], &label)
            if kind < 0:
                return LINE_PYTHON
            if kind:
                n_target_nts += 1
            else:
                label.start = 0
                label.end = -1
            self.target_label[i] = label
        if n_slots != n_target_nts:
            return LINE_PYTHON

        # Alignment: nonterminal links fix the slot of each target nonterminal; the rest are terminal links.
        cdef int a, b, dash, n_linked = 0
        self.links.clear()
        if n_fields > 3 and self.fields[3].end > self.fields[3].start:
            _split(line, self.fields[3], self.numbers)
            for i in range(<int>self.numbers.size()):
                field = self.numbers[i]
                dash = field.start
                while dash < field.end and line[dash] != b'-':
                    dash += 1
                if dash == field.end:
                    return LINE_PYTHON
                a = _ascii_int(line, field.start, dash)
                b = _ascii_int(line, dash + 1, field.end)
                if a < 0 or b < 0 or a >= n_source or b >= n_target:
                    return LINE_PYTHON
                if self.source_slot[a] >= 0:
                    if self.target_label[b].end < 0 or self.target_slot[b] >= 0 or self.source_linked[a]:
                        return LINE_PYTHON
                    self.source_linked[a] = 1
                    self.target_slot[b] = self.source_slot[a]
                    n_linked += 1
                elif self.target_label[b].end >= 0:
                    return LINE_PYTHON
                else:
                    self.links.push_back(a)
                    self.links.push_back(b)
        if n_linked != n_target_nts:
            return LINE_PYTHON  # links by label (hand-written tables), or only some links: parse_rule decides
        for i in range(n_target):
            if self.target_slot[i] >= 0 and not _same_text(line, self.slot_label[self.target_slot[i]],
                                                           self.target_label[i]):
                return LINE_PYTHON

        if n_fields > 4 and self.fields[4].end > self.fields[4].start:
            _split(line, self.fields[4], self.numbers)
            for i in range(<int>self.numbers.size()):
                if not _number(line, self.numbers[i], &value, False):
                    return LINE_PYTHON  # parse_rule reads any count, but this reader only finite decimals

        # The tree fragment: "{{Tree", whitespace, the tree, the first "}}" (_TREE_PROPERTY's match).
        cdef Span tree
        tree.start = tree.end = 0
        cdef int begin, end
        if n_fields > 6:
            field = self.fields[6]
            start = _find(line, field.start, field.end, b"{{Tree", 6)
            if start >= 0:
                begin = start + 6
                while begin < field.end and _blank(line[begin]):
                    begin += 1
                end = _find(line, begin, field.end, b"}}", 2)
                if begin == start + 6 or end < 0:
                    return LINE_PYTHON
                tree.start = begin
                tree.end = end
                tree = _strip(line, tree)

        self.check_scores(<int>self.line_scores.size())

        # The row.
        cdef int32_t item
        self.lhs.push_back(self.intern(self.label_index, line + lhs.start, lhs.end - lhs.start))
        for i in range(n_source):
            if self.source_slot[i] >= 0:
                item = -1 - self.source_slot[i]
            else:
                field = self.source_tokens[i]
                item = self.intern(self.word_index, line + field.start, field.end - field.start)
            self.source.push_back(item)
        self.source_offsets.push_back(<int64_t>self.source.size())
        for i in range(n_slots):
            label = self.slot_label[i]
            self.labels.push_back(self.intern(self.label_index, line + label.start, label.end - label.start))
        self.label_offsets.push_back(<int64_t>self.labels.size())
        for i in range(n_target):
            if self.target_slot[i] >= 0:
                item = -1 - self.target_slot[i]
            else:
                field = self.target_tokens[i]
                item = self.intern(self.word_index, line + field.start, field.end - field.start)
            self.target.push_back(item)
        self.target_offsets.push_back(<int64_t>self.target.size())
        for i in range(<int>self.line_scores.size()):
            self.scores.push_back(self.line_scores[i])
        self.push_links()
        self.trees.insert(self.trees.end(), line + tree.start, line + tree.end)
        self.tree_offsets.push_back(<int64_t>self.trees.size())
        self.line_numbers.push_back(self.line_number)
        return LINE_RULE

    cdef int push_links(self) except -1:
        """The line's terminal links (self.links), sorted as pairs."""
        cdef int n = <int>self.links.size() // 2, i, j
        cdef int32_t a, b
        for i in range(1, n):  # insertion sort: a rule has a handful of links
            a = self.links[2 * i]
            b = self.links[2 * i + 1]
            j = i - 1
            while j >= 0 and (self.links[2 * j] > a or (self.links[2 * j] == a and self.links[2 * j + 1] > b)):
                self.links[2 * j + 2] = self.links[2 * j]
                self.links[2 * j + 3] = self.links[2 * j + 1]
                j -= 1
            self.links[2 * j + 2] = a
            self.links[2 * j + 3] = b
        for i in range(2 * n):
            self.alignment.push_back(self.links[i])
        self.alignment_offsets.push_back(<int64_t>self.alignment.size() // 2)
        return 0

    cdef int check_scores(self, int n) except -1:
        if self.n_scores < 0:
            self.n_scores = n
            self.first_line = self.line_number
        elif n != self.n_scores:
            self.score_count_error(n, self.line_number, self.n_scores, self.first_line)
            raise AssertionError("score_count_error must raise")
        return 0

    cdef int32_t intern(self, SequenceIndex index, const char* text, int length) except -1:
        """The id of a word or label (its UTF-8 bytes) in `index`, added if new."""
        cdef int n = (length + 3) >> 2
        cdef bint added
        self.pack_buffer.resize(n + 1)
        if n:
            self.pack_buffer[n - 1] = 0
            memcpy(self.pack_buffer.data(), text, length)
        self.pack_buffer[n] = length
        return index.find_or_add(self.pack_buffer.data(), n + 1, &added)

    cdef int add_rule_object(self, rule) except -1:
        """A Rule (read by parse_rule) as a row."""
        cdef bytes text
        self.check_scores(len(rule.scores))
        text = (<str>rule.lhs).encode("utf-8")
        self.lhs.push_back(self.intern(self.label_index, text, len(text)))
        for symbol in rule.source:
            if type(symbol) is int:
                self.source.push_back(-1 - <int>symbol)
            else:
                text = (<str>symbol).encode("utf-8")
                self.source.push_back(self.intern(self.word_index, text, len(text)))
        self.source_offsets.push_back(<int64_t>self.source.size())
        for symbol in rule.labels:
            text = (<str>symbol).encode("utf-8")
            self.labels.push_back(self.intern(self.label_index, text, len(text)))
        self.label_offsets.push_back(<int64_t>self.labels.size())
        for symbol in rule.target:
            if type(symbol) is int:
                self.target.push_back(-1 - <int>symbol)
            else:
                text = (<str>symbol).encode("utf-8")
                self.target.push_back(self.intern(self.word_index, text, len(text)))
        self.target_offsets.push_back(<int64_t>self.target.size())
        for value in rule.scores:
            self.scores.push_back(value)
        self.links.clear()
        for a, b in rule.alignment:
            self.links.push_back(a)
            self.links.push_back(b)
        self.push_links()
        if rule.tree:
            text = (<str>rule.tree).encode("utf-8")
            self.trees.insert(self.trees.end(), <const char*>text, <const char*>text + len(text))
        self.tree_offsets.push_back(<int64_t>self.trees.size())
        self.line_numbers.push_back(self.line_number)
        return 0

    def arrays(self):
        """The rows read so far, as the fields of decoder.rule_arrays.RuleTableArrays."""
        cdef Py_ssize_t n = self.lhs.size()
        cdef int n_scores = max(self.n_scores, 0)
        scores = float64_array(self.scores).reshape(n, n_scores)
        return {
            "words": _strings(self.word_index),
            "labels": _strings(self.label_index),
            "lhs": int32_array(self.lhs),
            "source_offsets": int64_array(self.source_offsets),
            "source": int32_array(self.source),
            "target_offsets": int64_array(self.target_offsets),
            "target": int32_array(self.target),
            "label_offsets": int64_array(self.label_offsets),
            "rule_labels": int32_array(self.labels),
            "scores": scores,
            "alignment_offsets": int64_array(self.alignment_offsets),
            "alignment": int32_array(self.alignment).reshape(-1, 2),
            "tree_offsets": int64_array(self.tree_offsets),
            "trees": bytes(self.trees.data()[:self.trees.size()]) if self.trees.size() else b"",
            "line_numbers": int64_array(self.line_numbers),
        }
