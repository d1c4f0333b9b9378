"""Compiled reading of Moses rule-table lines (the hot loop of decoder.grammar.read_rules).

`rule_fields(line)` reads a well-formed line into the fields of a
decoder.grammar.Rule, exactly as decoder.grammar.parse_rule does, or returns
None for any line it does not read the usual way: a malformed line, a
non-finite score, nonterminals linked by label instead of by alignment, a
token that starts with "[" without being a nonterminal. parse_rule, the
pure-Python reference, then reads that line itself or raises the error naming
file and line. tests/test_grammar.py checks that both read the same.
"""
from libc.math cimport isfinite
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object o)
    bint PyObject_GC_IsTracked(object o)
    int PyObject_GenericSetAttr(object o, object name, object value) except -1

import dataclasses
import sys

cdef object _intern = sys.intern


cdef inline bint _plain_label(str text, Py_ssize_t start, Py_ssize_t end):
    """text[start:end] is a label: non-empty, no brackets (tokens hold no whitespace)."""
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    if end <= start:
        return False
    for i in range(start, end):
        c = text[i]
        if c == u"[" or c == u"]":
            return False
    return True


cdef inline str _lhs_label(str token):
    """The label of "[LABEL]", or None."""
    cdef Py_ssize_t n = len(token)
    if n >= 3 and token[0] == u"[" and token[n - 1] == u"]" and _plain_label(token, 1, n - 1):
        return token[1:n - 1]
    return None


cdef Py_ssize_t _nonterminal_split(str token):
    """For "[A][B]" the index of "][" (1 + len(A)); 0 for a terminal; -1 for a token that starts
    with "[" but is no nonterminal (parse_rule reads it as a terminal; this reader leaves it)."""
    cdef Py_ssize_t n = len(token), k
    if n == 0 or token[0] != u"[":
        return 0
    if token[n - 1] != u"]":
        return -1
    k = token.find("][", 1)
    if k < 0 or not _plain_label(token, 1, k) or not _plain_label(token, k + 2, n - 1):
        return -1
    return k


cdef inline tuple _floats(str text):
    """The numbers of a space-separated field (float() as parse_rule uses it); None if one is
    not finite."""
    cdef list parts = text.split()
    cdef Py_ssize_t i, n = len(parts)
    cdef tuple out = PyTuple_New(n)
    cdef double value
    cdef object number
    for i in range(n):
        try:
            value = float(parts[i])
        except ValueError:
            return None
        if not isfinite(value):
            return None
        number = value
        Py_INCREF(number)
        PyTuple_SET_ITEM(out, i, number)
    return out


cdef inline int _ascii_int(str text) except -2:
    """A non-negative decimal written in ASCII digits, or -1."""
    cdef Py_ssize_t i, n = len(text)
    cdef long value = 0
    cdef Py_UCS4 c
    if n == 0 or n > 9:
        return -1
    for i in range(n):
        c = text[i]
        if c < u"0" or c > u"9":
            return -1
        value = value * 10 + (<int>c - 48)
    return <int>value


cdef dict _nonterminal_labels(list tokens, Py_ssize_t n):
    """{position: label} of the nonterminals "[X][LABEL]" among tokens[:n] (in order), or None if a
    token starts with "[" without being one."""
    cdef dict labels = {}
    cdef Py_ssize_t i, split
    cdef str token
    for i in range(n):
        token = tokens[i]
        split = _nonterminal_split(token)
        if split < 0:
            return None
        if split > 0:
            labels[i] = _intern(token[split + 2:len(token) - 1])
    return labels


cdef tuple _side(list tokens, Py_ssize_t n, dict slot_at):
    """A rule side: the slot number at each nonterminal position, the (interned) word elsewhere."""
    cdef tuple side = PyTuple_New(n)
    cdef Py_ssize_t i
    cdef object item
    for i in range(n):
        item = slot_at.get(i)
        if item is None:
            item = _intern(tokens[i])
        Py_INCREF(item)
        PyTuple_SET_ITEM(side, i, item)
    return side


cdef dict _field_names = {}  # dataclass -> its field names, in order


def read_rule(str line, rule_type):
    """rule_type(*rule_fields(line)), or None when parse_rule must read the line.

    `rule_type` is a dataclass (decoder.grammar.Rule); the rule is made without calling its
    __init__ and __post_init__, which cost as much as reading the line: rule_fields gives only
    fields that pass Rule.__post_init__'s checks (slots 0..n-1 in source order, each linked to
    one target nonterminal, one label per slot), and the frozen fields are set as __init__ sets
    them (object.__setattr__).

    The rule and its tuples hold only strings and numbers, so they cannot be part of a reference
    cycle: they are taken off the cyclic collector's lists, which would otherwise walk every rule
    of a million-rule table at each full collection for as long as the table is alive."""
    fields = rule_fields(line)
    if fields is None:
        return None
    names = _field_names.get(rule_type)
    if names is None:
        names = _field_names[rule_type] = tuple(f.name for f in dataclasses.fields(rule_type))
        if len(<tuple>names) != len(<tuple>fields):
            raise TypeError(f"{rule_type} has {len(names)} fields, rule_fields gives {len(fields)}")
    rule = rule_type.__new__(rule_type)
    cdef Py_ssize_t i
    for i in range(len(<tuple>fields)):
        PyObject_GenericSetAttr(rule, (<tuple>names)[i], (<tuple>fields)[i])
    for field in <tuple>fields:
        if type(field) is tuple and PyObject_GC_IsTracked(field):
            PyObject_GC_UnTrack(field)
    if PyObject_GC_IsTracked(rule):
        PyObject_GC_UnTrack(rule)
    return rule


def rule_fields(str line):
    """(lhs, source, target, labels, scores, alignment, counts, tree, properties) of a rule-table
    line, as decoder.grammar.parse_rule reads it; None when parse_rule must read it."""
    cdef list fields = [f.strip() for f in line.rstrip("\n").split("|||")]
    cdef Py_ssize_t n_fields = len(fields)
    if n_fields < 3:
        return None
    cdef list source_tokens = (<str>fields[0]).split()
    cdef list target_tokens = (<str>fields[1]).split()
    cdef Py_ssize_t n_source = len(source_tokens) - 1, n_target = len(target_tokens) - 1
    if n_source < 1 or n_target < 1:
        return None
    if _lhs_label(source_tokens[n_source]) is None:
        return None
    lhs = _lhs_label(target_tokens[n_target])
    if lhs is None:
        return None
    scores = _floats(fields[2])
    if scores is None:
        return None

    # Nonterminals by position; the source ones are the slots, numbered left to right.
    cdef dict label_at_source = _nonterminal_labels(source_tokens, n_source)
    cdef dict label_at_target = _nonterminal_labels(target_tokens, n_target)
    if label_at_source is None or label_at_target is None or len(label_at_source) != len(label_at_target):
        return None
    cdef dict slot_at_source = {position: slot for slot, position in enumerate(label_at_source)}
    cdef list labels = list(label_at_source.values())
    cdef Py_ssize_t n_target_nts = len(label_at_target)

    # Alignment: nonterminal links fix the slot of each target nonterminal; the rest are terminal links.
    cdef dict slot_at_target = {}
    cdef list terminal_links = []
    cdef set linked_sources = set()
    cdef int a, b
    if n_fields > 3 and fields[3]:
        for pair in (<str>fields[3]).split():
            a_text, dash, b_text = (<str>pair).partition("-")
            a = _ascii_int(a_text)
            b = _ascii_int(b_text)
            if not dash or a < 0 or b < 0 or a >= n_source or b >= n_target:
                return None
            if a in slot_at_source:
                if b not in label_at_target or b in slot_at_target or a in linked_sources:
                    return None
                linked_sources.add(a)
                slot_at_target[b] = slot_at_source[a]
            elif b in label_at_target:
                return None
            else:
                terminal_links.append((a, b))
    if len(slot_at_target) != n_target_nts:
        return None  # links by label (hand-written tables), or only some links: parse_rule decides
    for j, slot in slot_at_target.items():
        if labels[slot] != label_at_target[j]:
            return None

    counts = ()
    if n_fields > 4 and fields[4]:
        counts = _floats(fields[4])
        if counts is None:
            return None  # parse_rule does not require finite counts, but reads them the same way
    tree = None
    cdef str properties = ""
    cdef Py_ssize_t start, begin, end
    if n_fields > 6:
        properties = " ".join(fields[6:]).strip()
        start = (<str>properties).find("{{Tree")
        if start >= 0:
            # _TREE_PROPERTY's match, found with str.find: "{{Tree", whitespace, the tree, the
            # first "}}". Anything else (no whitespace, no "}}") is left to parse_rule.
            begin = start + 6
            while begin < len(properties) and (<str>properties)[begin].isspace():
                begin += 1
            end = (<str>properties).find("}}", begin)
            if begin == start + 6 or end < 0:
                return None
            tree = (<str>properties)[begin:end].strip()
            properties = ((<str>properties)[:start] + (<str>properties)[end + 2:]).strip()

    source = _side(source_tokens, n_source, slot_at_source)
    target = _side(target_tokens, n_target, slot_at_target)
    terminal_links.sort()
    for link in terminal_links:
        PyObject_GC_UnTrack(link)
    return (_intern(lhs), source, target, tuple(labels), scores, tuple(terminal_links), counts, tree,
            properties)
