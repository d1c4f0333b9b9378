"""RuleTableReader: a Moses rule table read straight into integer arrays (see _rule_reader.pyx)."""
from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector

from decoder._ext._sequence_index cimport SequenceIndex


# What one line of the table is to the compiled reader.
cdef enum:
    LINE_RULE = 0  # read into the arrays
    LINE_BLANK = 1  # only whitespace: skipped
    LINE_PYTHON = 2  # anything unusual: read by decoder.grammar (parse_rule), which reads it or raises
    LINE_NOT_UTF8 = 3  # bytes that are not UTF-8: InputError naming file and line


# The tokens and fields of the line being read (byte offsets into it).
cdef struct Span:
    int start
    int end


cdef class RuleTableReader:
    cdef public object path
    cdef object python_line  # decoder.rule_arrays' reader of an unusual line (parse_rule)
    cdef object not_utf8  # raises InputError for a line that is not UTF-8
    cdef object score_count_error  # raises GrammarFormatError for another number of scores

    # Vocabularies: UTF-8 bytes (packed into int32s, the length last) -> dense ids.
    cdef SequenceIndex word_index
    cdef SequenceIndex label_index
    cdef vector[int32_t] pack_buffer

    # The rules, one row each (see RuleTableArrays in decoder/rule_arrays.py).
    cdef vector[int32_t] lhs
    cdef vector[int32_t] source, target, labels  # word id >= 0 or slot k as -1 - k; labels: label ids
    cdef vector[int64_t] source_offsets, target_offsets, label_offsets
    cdef vector[double] scores
    cdef vector[int32_t] alignment  # terminal links (source position, target position), sorted
    cdef vector[int64_t] alignment_offsets
    cdef vector[char] trees
    cdef vector[int64_t] tree_offsets
    cdef vector[int64_t] line_numbers
    cdef public int n_scores  # per rule (-1 before the first rule)
    cdef public int64_t first_line  # the line of the first rule
    cdef public int64_t line_number  # lines read so far

    # Scratch for one line.
    cdef vector[Span] fields, source_tokens, target_tokens, numbers
    cdef vector[int] source_slot  # per source position: its slot, or -1 for a word
    cdef vector[Span] slot_label  # per slot: its label (bytes of the line)
    cdef vector[Span] target_label  # per target position: its label if a nonterminal, else (0, -1)
    cdef vector[int] target_slot  # per target position: the slot linked to it, or -1
    cdef vector[char] source_linked
    cdef vector[int32_t] links  # terminal links, pairs
    cdef vector[double] line_scores

    cdef int read_line(self, const char* line, int length) except -1
    cdef int fast_line(self, const char* line, int length) except -1
    cdef int push_links(self) except -1
    cdef int32_t intern(self, SequenceIndex index, const char* text, int length) except -1
    cdef int add_rule_object(self, rule) except -1
    cdef int check_scores(self, int n) except -1
