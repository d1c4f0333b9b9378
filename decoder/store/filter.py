"""Filtering a rule table to a test set.

A rule is kept if some test sentence contains every maximal run of the rule's
source terminals as a contiguous n-gram (the runs may occur in any order: a rule
can only be used on a sentence that has all of them). Test n-grams up to the
longest run of any rule are indexed once, each with a bit set of the sentences
that contain it, so a rule costs one dict look-up and one AND per run.
"""
from __future__ import annotations

import os
from typing import Iterable, Sequence

import numpy as np

from ..grammar import Rule, escape_word, open_text
from ..rule_arrays import RuleTableArrays


def read_sentences(path: str | os.PathLike) -> list[list[str]]:
    """A tokenized text, one sentence per line (plain or gzip), its words escaped as the rule
    table's are (decoder.grammar.escape_word), as the decoder will look them up."""
    with open_text(path) as lines:
        return [[escape_word(w) for w in line.split()] for line in lines]


def rule_runs(rule: Rule) -> list[tuple[str, ...]]:
    """The maximal runs of consecutive source terminals of a rule."""
    runs: list[tuple[str, ...]] = []
    current: list[str] = []
    for symbol in rule.source:
        if isinstance(symbol, str):
            current.append(symbol)
        elif current:
            runs.append(tuple(current))
            current = []
    if current:
        runs.append(tuple(current))
    return runs


def ngram_index(sentences: Sequence[Sequence[str]], max_length: int) -> dict[tuple[str, ...], int]:
    """n-gram (up to max_length words) -> bit set (an int) of the sentences containing it."""
    containing: dict[tuple[str, ...], list[int]] = {}
    for i, words in enumerate(sentences):
        for n in range(1, min(max_length, len(words)) + 1):
            for start in range(len(words) - n + 1):
                ids = containing.setdefault(tuple(words[start:start + n]), [])
                if not ids or ids[-1] != i:
                    ids.append(i)
    return {gram: _bit_set(ids, len(sentences)) for gram, ids in containing.items()}


def _bit_set(ids: list[int], size: int) -> int:
    # building a big int bit by bit is quadratic: pack many bits with numpy instead
    if len(ids) < 64:
        return sum(1 << i for i in ids)
    bits = np.zeros(size, dtype=bool)
    bits[ids] = True
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


def filter_rules(rules: Iterable[Rule], sentences: Sequence[Sequence[str]]) -> list[Rule]:
    """The rules whose source runs all occur in one test sentence (order kept)."""
    rules = list(rules)
    runs_per_rule = [rule_runs(r) for r in rules]
    longest = max((len(run) for runs in runs_per_rule for run in runs), default=0)
    index = ngram_index(sentences, longest)
    everything = (1 << len(sentences)) - 1
    kept = []
    for rule, runs in zip(rules, runs_per_rule):
        where = everything
        for run in runs:
            where &= index.get(run, 0)
            if not where:
                break
        if where:
            kept.append(rule)
    return kept


def filter_rule_arrays(table: RuleTableArrays, sentences: Sequence[Sequence[str]]) -> RuleTableArrays:
    """filter_rules over the rows of a table: the same rules, in the same order (the runs are
    found with numpy and looked up as tuples of word ids)."""
    source, offsets = table.source, table.source_offsets
    n_items = len(source)
    is_word = source >= 0
    row_start = np.zeros(n_items + 1, dtype=bool)
    row_start[offsets] = True
    previous_is_word = np.r_[False, is_word[:-1]] & ~row_start[:-1]
    next_is_word = np.r_[is_word[1:], False] & ~row_start[1:]
    starts = np.flatnonzero(is_word & ~previous_is_word)
    ends = np.flatnonzero(is_word & ~next_is_word) + 1
    run_rows = np.searchsorted(offsets, starts, side="right") - 1
    word_id = {word: i for i, word in enumerate(table.words)}
    index = ngram_index([[word_id.get(w, -1) for w in words] for words in sentences],
                        int((ends - starts).max()) if len(starts) else 0)
    everything = (1 << len(sentences)) - 1
    where = [everything] * len(table)
    items = source.tolist()
    for row, start, end in zip(run_rows.tolist(), starts.tolist(), ends.tolist()):
        if where[row]:
            where[row] &= index.get(tuple(items[start:end]), 0)
    return table.subset([row for row, found in enumerate(where) if found])
