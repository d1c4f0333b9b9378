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
