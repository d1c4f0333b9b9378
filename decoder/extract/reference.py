"""The pure-Python references of the compiled extraction kernels (ext/_extract.pyx).

tests/test_extract_compiled.py holds each kernel to its reference, output for
output; `ExtractionConfig(compiled=False)` runs the whole extraction on them.

    kernel (decoder._ext._extract)   reference
    parse_tree_arrays                parse_tree_reference       (trees.py: parse_tree reports errors with it)
    parse_alignment_links            parse_alignment_reference  (alignment.py: parse_alignment likewise)
    frontier_arrays                  spans                      (alignment.py: AlignmentGraph.span, .complement)
    extract_sentence                 extract_occurrences_reference (rules.extract_rules + scoring.rule_fields)
    count_sentence                   count_occurrences_reference
    lexical_weights                  lexical_weights            (scoring.py)
    merge_by_target                  merge_by_target            (scoring.py)
    table_lines                      table_lines                (scoring.py)

The readers' references live next to the readers, which call them to say what
is wrong with a line the kernel rejects; this module names them all in one place.
"""
from __future__ import annotations

from .alignment import parse_alignment_reference, spans
from .rules import Limits, extract_rules
from .scoring import lexical_weights, merge_by_target, rule_fields, table_lines
from .trees import parse_tree_reference

__all__ = ["parse_tree_reference", "parse_alignment_reference", "spans", "extract_occurrences_reference",
           "count_occurrences_reference", "lexical_weights", "merge_by_target", "table_lines"]


def extract_occurrences_reference(graph, limits: Limits) -> list[tuple]:
    """The rule occurrences of a sentence pair as (fields, size, n_nonterminals, lhs, n_source_symbols),
    fields as `scoring.rule_fields` gives them (the kernel: extract_sentence)."""
    return [(rule_fields(r), r.size, len(r.labels), r.lhs, len(r.source)) for r in extract_rules(graph, limits)]


def count_occurrences_reference(graph, limits: Limits, occurrences: dict, lhs: dict, nonterminals: dict,
                                single_word_labels: dict) -> tuple[int, int]:
    """pipeline.count_occurrences in pure Python (the kernel: count_sentence)."""
    found = extract_occurrences_reference(graph, limits)
    minimal = 0
    for fields, size, n_nonterminals, label, n_symbols in found:
        occurrences[fields] = occurrences.get(fields, 0) + 1
        lhs[label] = lhs.get(label, 0) + 1
        nonterminals[n_nonterminals] = nonterminals.get(n_nonterminals, 0) + 1
        if size == 1:
            minimal += 1
            if n_symbols == 1 and n_nonterminals == 0:
                key = (fields[0][:-4], label)  # "word [X]" -> word
                single_word_labels[key] = single_word_labels.get(key, 0) + 1
    return len(found), minimal
