"""Glue rules and unknown-word labels, each in its own file (as Moses'
--GlueGrammar and --UnknownWordLabel files).

Glue grammar (Moses rule-table format, one score column named "glue", written
to GLUE.features.json). With the glue label Q (default "Q", Moses' choice,
so it never clashes with a treebank label) and every label L that is the LHS
of an extracted rule:

    [X][L] [X] ||| [X][L] [Q] ||| g ||| 0-0                         Q -> < L , L >       start
    [X][Q] [X][L] [X] ||| [X][Q] [X][L] [Q] ||| 2.71828 ||| 0-0 1-1  Q -> < Q L , Q L >  concatenation

g is 1 (glue count 0) when L was the root label of some training tree and
exp(1) otherwise; every concatenation counts one glue, so a sentence covered
by one tree rooted in a usual root label costs nothing. The goal symbol of a
decoder using this file is Q.

Unknown-word labels: lines "LABEL probability", the LHS labels of minimal
rules whose source side is a single word, counted over the source words seen
once in the training corpus (the words most like unknown ones; all
single-word rules if there are none), labels under a minimum relative
frequency dropped and the rest renormalised to sum to one.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Iterable

from ..grammar import Rule, feature_names_path, open_text, write_rules

GLUE_FEATURE_NAMES = ["glue"]
E = 2.718281828459045


def glue_rules(labels: Iterable[str], root_labels: Iterable[str], glue_label: str = "Q") -> list[Rule]:
    roots = set(root_labels)
    rules = []
    for label in sorted(set(labels) - {glue_label}):
        start_cost = 1.0 if label in roots else E
        rules.append(Rule(glue_label, (0,), (0,), (label,), (start_cost,)))
        rules.append(Rule(glue_label, (0, 1), (0, 1), (glue_label, label), (E,)))
    return rules


def write_glue(path: str, labels: Iterable[str], root_labels: Iterable[str], glue_label: str = "Q",
               names_path: str | None = None) -> int:
    """Write the glue grammar to `path` and its column names to `names_path` (default: beside it)."""
    n = write_rules(glue_rules(labels, root_labels, glue_label), path)
    with open(names_path or feature_names_path(path), "w") as f:
        json.dump(GLUE_FEATURE_NAMES, f)
    return n


def unknown_word_labels(single_word_labels: Counter, source_word_counts: Counter,
                        min_relative_frequency: float = 0.03) -> dict[str, float]:
    """Label -> probability from (source word, LHS) counts of single-word minimal rules."""
    labels: Counter = Counter()
    for (word, label), c in single_word_labels.items():
        if source_word_counts.get(word, 0) == 1:
            labels[label] += c
    if not labels:
        for (word, label), c in single_word_labels.items():
            labels[label] += c
    total = sum(labels.values())
    if not total:
        return {}
    kept = {label: c for label, c in labels.items() if c / total >= min_relative_frequency}
    kept_total = sum(kept.values())
    return {label: c / kept_total for label, c in sorted(kept.items(), key=lambda kv: (-kv[1], kv[0]))}


def write_unknown_labels(path: str, probabilities: dict[str, float]) -> None:
    with open_text(path, "w") as f:
        for label, p in probabilities.items():
            f.write(f"{label} {p:.6g}\n")


def read_unknown_labels(path: str) -> dict[str, float]:
    with open_text(path) as f:
        return {label: float(p) for label, p in (line.split() for line in f if line.strip())}
