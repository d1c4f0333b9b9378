"""Rule features from corpus counts, and the Moses rule-table fields of a rule.

Score columns, in order (`FEATURE_NAMES`, written to RULES.features.json).
As in Moses, each column holds a positive value whose natural log is the
feature: probabilities as probabilities, a count-like feature f as exp(f).

    p_tgt_given_src    c(rule) / c(source side)             source side = the source field, slot labels included
    p_src_given_tgt    c(rule) / c(target side)             target side = the target field, LHS included
    lex_tgt_given_src  lexical weight lex(t|s) (Koehn et al. 2003) from the word alignment
    lex_src_given_tgt  lexical weight lex(s|t)
    p_rule_given_root  c(rule) / c(rules with the same LHS)
    singleton          exp(1) if the rule was seen once, else exp(0) = 1
    target_words       exp(number of target words)
    rule_penalty       exp(1) for every rule (Moses' phrase penalty)

A rule's identity is its source field, target field and nonterminal links;
occurrences that differ only in their word links or tree fragment are one
rule, which keeps the most frequent of them (ties: the smallest string),
as Moses' consolidate does. The counts field is c(target side), c(source
side), c(rule), as in Moses.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from typing import Callable, Iterable, Mapping, Sequence

from ..grammar import FIELD_SEP, SOURCE_NT_LABEL
from .rules import ExtractedRule

FEATURE_NAMES = ["p_tgt_given_src", "p_src_given_tgt", "lex_tgt_given_src", "lex_src_given_tgt",
                 "p_rule_given_root", "singleton", "target_words", "rule_penalty"]

NULL = None  # the empty word of the lexical tables
E = math.e


def rule_fields(rule: ExtractedRule) -> tuple[str, str, str, str, str]:
    """(source field, target field, nonterminal links, all links, tree) of a rule occurrence."""
    labels = rule.labels
    source_tokens = []
    slot_position = [0] * len(labels)
    for pos, s in enumerate(rule.source):
        if s.__class__ is str:
            source_tokens.append(s)
        else:
            source_tokens.append(f"[{SOURCE_NT_LABEL}][{labels[s]}]")
            slot_position[s] = pos
    target_tokens = []
    nt_links = []
    for pos, s in enumerate(rule.target):
        if s.__class__ is str:
            target_tokens.append(s)
        else:
            target_tokens.append(f"[{SOURCE_NT_LABEL}][{labels[s]}]")
            nt_links.append((slot_position[s], pos))
    source_tokens.append(f"[{SOURCE_NT_LABEL}]")
    target_tokens.append(f"[{rule.lhs}]")
    nt_links.sort()
    links = sorted(rule.alignment + tuple(nt_links)) if nt_links else rule.alignment
    return (" ".join(source_tokens), " ".join(target_tokens),
            " ".join(f"{i}-{j}" for i, j in nt_links),
            " ".join(f"{i}-{j}" for i, j in links), rule.tree)


class LexicalTable:
    """Word translation probabilities w(t|s) and w(s|t) from link counts, with NULL
    for unaligned words: an unaligned target word t counts as (NULL, t), an
    unaligned source word s as (s, NULL)."""

    def __init__(self, link_counts: Mapping):
        source_total: Counter = Counter()
        target_total: Counter = Counter()
        for (s, t), c in link_counts.items():
            source_total[s] += c
            target_total[t] += c
        self.t_given_s = {(s, t): c / source_total[s] for (s, t), c in link_counts.items()}
        self.s_given_t = {(s, t): c / target_total[t] for (s, t), c in link_counts.items()}


def count_links(source: list[str], target: list[str], source_links: list[list[int]],
                target_links: list[list[int]], counts: dict) -> None:
    """Add a sentence pair's word links (and NULL links of unaligned words) to counts."""
    get = counts.get
    for i, js in enumerate(source_links):
        s = source[i]
        if js:
            for j in js:
                key = (s, target[j])
                counts[key] = get(key, 0) + 1
        else:
            key = (s, NULL)
            counts[key] = get(key, 0) + 1
    for j, is_ in enumerate(target_links):
        if not is_:
            key = (NULL, target[j])
            counts[key] = get(key, 0) + 1


def lexical_weights(source_field: str, target_field: str, alignment_field: str,
                    table: LexicalTable) -> tuple[float, float]:
    """(lex(t|s), lex(s|t)) of a rule, over its words; nonterminals are ignored."""
    source = source_field.split()
    target = target_field.split()
    to_source: dict[int, list[int]] = {}
    to_target: dict[int, list[int]] = {}
    for link in alignment_field.split():
        i, _, j = link.partition("-")
        i, j = int(i), int(j)
        if source[i][0] == "[":  # a nonterminal pair
            continue
        to_source.setdefault(j, []).append(i)
        to_target.setdefault(i, []).append(j)
    t_given_s = table.t_given_s
    s_given_t = table.s_given_t
    lex_ts = 1.0
    for j in range(len(target) - 1):  # the last token is the LHS
        t = target[j]
        if t[0] == "[":
            continue
        linked = to_source.get(j)
        if linked:
            lex_ts *= sum(t_given_s.get((source[i], t), 0.0) for i in linked) / len(linked)
        else:
            lex_ts *= t_given_s.get((NULL, t), 0.0)
    lex_st = 1.0
    for i in range(len(source) - 1):
        s = source[i]
        if s[0] == "[":
            continue
        linked = to_target.get(i)
        if linked:
            lex_st *= sum(s_given_t.get((s, target[j]), 0.0) for j in linked) / len(linked)
        else:
            lex_st *= s_given_t.get((s, NULL), 0.0)
    return lex_ts, lex_st


def format_score(x: float) -> str:
    """Six significant digits, as Moses writes scores."""
    return "%.6g" % x


def format_count(x: float) -> str:
    return str(int(x)) if x == int(x) else repr(float(x))


def features(count: float, source_count: float, target_count: float, lhs_count: float,
             lex_ts: float, lex_st: float, target_words: int) -> list[float]:
    """The score columns of one rule, in the order of FEATURE_NAMES."""
    return [count / source_count, count / target_count, lex_ts, lex_st, count / lhs_count,
            E if count <= 1 else 1.0, math.exp(target_words), E]


_SCORES_FORMAT = " ".join(["%.6g"] * len(FEATURE_NAMES))


def table_line(source_field: str, target_field: str, scores: Sequence[float], alignment_field: str,
               counts: Iterable[float], tree: str | None) -> str:
    """One rule-table line, field for field as decoder.grammar.format_rule writes it."""
    score_field = (_SCORES_FORMAT % tuple(scores) if len(scores) == len(FEATURE_NAMES)
                   else " ".join(format_score(s) for s in scores))
    count_field = " ".join([str(c) if c.__class__ is int else format_count(c) for c in counts])
    if tree is None:
        return FIELD_SEP.join([source_field, target_field, score_field, alignment_field, count_field, "", ""]).rstrip()
    return f"{source_field} ||| {target_field} ||| {score_field} ||| {alignment_field} ||| {count_field} |||  ||| {{{{Tree {tree}}}}}"


def merge_by_target(record_lists: list[list[tuple]], bounds: list[str], table: LexicalTable
                    ) -> tuple[list[list[tuple]], int]:
    """Stage 2 of the pipeline on the occurrence counts of a target-side shard, records
    (source field, target field, nonterminal links, links, tree, count): merge them into rules,
    add c(target side) and the lexical weights, and split the rows by source-side range
    (`bounds`). Return the rows of each range (as `table_lines` takes them) and the number of rules."""
    counts: dict = {}
    for records in record_lists:
        for record in records:
            key = record[:5]
            counts[key] = counts.get(key, 0) + record[5]
    # One rule per (source, target, nonterminal links); keep its most frequent links and tree.
    best: dict[tuple, list] = {}
    for (source, target, nt_links, alignment, tree), c in counts.items():
        key = (source, target, nt_links)
        b = best.get(key)
        if b is None:
            best[key] = [c, c, alignment, tree]
        else:
            b[0] += c
            if c > b[1] or (c == b[1] and (alignment, tree) < (b[2], b[3])):
                b[1], b[2], b[3] = c, alignment, tree
    target_count: dict = {}
    for (source, target, _), b in best.items():
        target_count[target] = target_count.get(target, 0) + b[0]
    parts: list[list] = [[] for _ in range(len(bounds) + 1)]
    for (source, target, _), (c, _, alignment, tree) in best.items():
        lex_ts, lex_st = lexical_weights(source, target, alignment, table)
        parts[bisect_right(bounds, source)].append(
            (source, target, alignment, tree, c, target_count[target], lex_ts, lex_st))
    return parts, len(best)


def table_lines(rows: list[tuple], lhs_counts: Mapping, min_count: float = 0.0,
                keep: Callable[[str], bool] | None = None) -> tuple[list[str], dict]:
    """Stage 3 of the pipeline on the rules of a source-side range: their table lines and the
    number of rules by nonterminal count. Rows are (source field, target field, links, tree,
    c(rule), c(target side), lex(t|s), lex(s|t)), every row of a source side among them."""
    source_count: dict = {}
    for row in rows:
        source_count[row[0]] = source_count.get(row[0], 0) + row[4]
    lines = []
    nonterminals: dict = {}
    for source, target, alignment, tree, c, c_target, lex_ts, lex_st in rows:
        if c < min_count:
            continue
        if keep is not None and not keep(source):
            continue
        c_source = source_count[source]
        scores = features(c, c_source, c_target, lhs_counts[lhs_of(target)], lex_ts, lex_st,
                          count_target_words(target))
        lines.append(table_line(source, target, scores, alignment, (c_target, c_source, c), tree))
        n = count_nonterminals(source)
        nonterminals[n] = nonterminals.get(n, 0) + 1
    return lines, nonterminals


def lhs_of(target_field: str) -> str:
    """The LHS label of a target field ("the [X][NN] [NP]" -> "NP")."""
    return target_field[target_field.rindex("[") + 1:-1]


def count_target_words(target_field: str) -> int:
    # tokens less the LHS and the nonterminals (words never start with "[": they are escaped)
    return target_field.count(" ") - target_field.count(f"[{SOURCE_NT_LABEL}][")


def count_nonterminals(source_field: str) -> int:
    return source_field.count(f"[{SOURCE_NT_LABEL}][")
