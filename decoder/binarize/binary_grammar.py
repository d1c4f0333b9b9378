"""Binary grammars: the binary rules a binarization makes, their text format, and unbinarization.

A `BinaryRule` has one or two children. A child is a nonterminal symbol (a
`str`: a real label such as "NP", or a virtual symbol, which starts with "<")
or a run of source terminals (a `tuple` of words). The target side is a tuple
of target words (`str`) and references (`int`) to the target blocks its
children carry, left child's first; it is `None` for a monolingual virtual
rule, whose item carries its children's blocks unchanged until the top rule
assembles them. A real nonterminal and a synchronous virtual symbol carry one
block, a terminal run none, a monolingual virtual symbol one per slot it covers.

The top rule of a source rule has the source rule's LHS and `origin` = the
source rule's index (its features and tree fragment live there); virtual rules
have origin -1 and are shared by every source rule that makes them.

Virtual symbols are named by what they cover, so identical ones are shared:
`<[NP] 会 || [0] will be>` covers source `NP 会` and target `NP will be`
(`[k]` = the span's k-th slot, in source order); `<mono [VB] [NP] 会>` is a
monolingual prefix.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Union

import numpy as np

from ..grammar import Rule, open_text
from .rule_shape import NodeTemplate, TokenSequence

Child = Union[str, tuple]

FORMAT_VERSION = 1


class BinaryRule(NamedTuple):
    lhs: str
    children: tuple  # 1 or 2 children: str (nonterminal) or tuple of words (terminal run)
    target: Optional[tuple]  # str words and int block references; None: carry the children's blocks
    origin: int = -1  # index of the source rule for a top rule, -1 for a virtual rule


def is_virtual(symbol) -> bool:
    return isinstance(symbol, str) and symbol.startswith("<")


def is_monolingual_virtual(symbol) -> bool:
    return isinstance(symbol, str) and symbol.startswith("<mono ")


@dataclass
class BinaryGrammar:
    """A binarized grammar: distinct binary rules, and which of them binarize each source rule."""

    strategy: str
    source_rules: list[Rule]
    rules: list[BinaryRule] = field(default_factory=list)
    binarizations: list[tuple[int, ...]] = field(default_factory=list)  # per source rule, post-order, top last; () if dropped
    bucket_keys: list[tuple[str, ...]] = field(default_factory=list)  # per source rule: L(v) per node, same order
    non_binarizable: list[int] = field(default_factory=list)  # source rules whose permutation is not binarizable
    report: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rules)

    def virtual_symbols(self) -> set[str]:
        return {r.lhs for r in self.rules if is_virtual(r.lhs)}

    def top_rules(self) -> list[BinaryRule]:
        return [r for r in self.rules if r.origin >= 0]


@dataclass
class BinaryRuleArrays:
    """A binarized grammar as integer arrays, as the compiled kernel emits it for the store
    (`binarize(..., arrays=True)`): the rules `BinaryGrammar.rules` would hold, in the same order,
    one row each, and no BinaryRule objects.

    Symbols are the kernel's ids: `symbol_objects[s]` is the child object a BinaryRule would hold
    (a label, a run tuple or a virtual name), `symbol_kind[s]` says which (`SYMBOL_KINDS`), and
    every id in the rows is canonical (the first symbol with an equal object). `rule_lhs` is a
    symbol id, or for a top rule -1 - k for label `lhs_labels[k]`; `rule_child1` is -1 for one
    child; a target row holds word ids (`target_words`) and -1 - k for carried block k, and
    `rule_carries` marks a monolingual virtual rule (target None)."""

    strategy: str
    source_rules: list[Rule]
    rule_lhs: np.ndarray  # int32
    rule_child0: np.ndarray  # int32
    rule_child1: np.ndarray  # int32
    rule_target_offsets: np.ndarray  # int64[n + 1]
    rule_target: np.ndarray  # int32
    rule_carries: np.ndarray  # uint8
    rule_origin: np.ndarray  # int64
    symbol_kind: np.ndarray  # uint8
    symbol_canonical: np.ndarray  # int32
    symbol_objects: list
    lhs_labels: list[str]
    target_words: list[str]
    non_binarizable: list[int] = field(default_factory=list)
    report: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rule_lhs)


# symbol_kind codes of BinaryRuleArrays (the kernel's LABEL_SYMBOL, RUN_SYMBOL, VIRTUAL_SYMBOL).
SYMBOL_KINDS = {"label": 0, "run": 1, "virtual": 2}


class BinaryGrammarBuilder:
    """Accumulates binary rules, sharing virtual rules across source rules."""

    def __init__(self, strategy: str, source_rules: list[Rule]):
        self.grammar = BinaryGrammar(strategy, source_rules)
        self._virtual_index: dict[BinaryRule, int] = {}

    def add(self, rule_index: int, tokens: TokenSequence, templates: tuple[NodeTemplate, ...]) -> None:
        rule = self.grammar.source_rules[rule_index]
        token_keys = [_token_key(rule, tokens, t) for t in range(tokens.size)]
        first_slot = []
        slot = 0
        for s in tokens.slots:
            first_slot.append(slot)
            slot += s >= 0
        names: list[str] = []
        indices: list[int] = []
        keys: list[tuple[str, ...]] = []
        for template in templates:
            p, q = template.span
            bucket = tuple(token_keys[p:q + 1])
            children = tuple(
                _token_child(rule, tokens, index) if kind == "token" else names[index]
                for kind, index in template.children
            )
            target = None
            if template.target is not None:
                target = tuple(rule.target[i] if kind == "word" else i for kind, i in template.target)
            if template.is_top:
                names.append(rule.lhs)
                binary = BinaryRule(rule.lhs, children, target, rule_index)
                self.grammar.rules.append(binary)
                indices.append(len(self.grammar.rules) - 1)
            else:
                if template.target is None:
                    name = "<mono " + " ".join(bucket) + ">"
                else:
                    lo, hi = template.block
                    base = first_slot[p]
                    yield_ = " ".join(
                        s if isinstance(s, str) else f"[{s - base}]" for s in rule.target[lo:hi + 1]
                    )
                    name = "<" + " ".join(bucket) + " || " + yield_ + ">"
                names.append(name)
                binary = BinaryRule(name, children, target, -1)
                index = self._virtual_index.get(binary)
                if index is None:
                    index = len(self.grammar.rules)
                    self.grammar.rules.append(binary)
                    self._virtual_index[binary] = index
                indices.append(index)
            keys.append(bucket)
        self.grammar.binarizations.append(tuple(indices))
        self.grammar.bucket_keys.append(tuple(keys))

    def skip(self) -> None:
        """A source rule that is dropped (non-binarizable under the `drop` policy)."""
        self.grammar.binarizations.append(())
        self.grammar.bucket_keys.append(())


def _token_key(rule: Rule, tokens: TokenSequence, t: int) -> str:
    slot = tokens.slots[t]
    return f"[{rule.labels[slot]}]" if slot >= 0 else " ".join(tokens.runs[t])


def _token_child(rule: Rule, tokens: TokenSequence, t: int) -> Child:
    slot = tokens.slots[t]
    return rule.labels[slot] if slot >= 0 else tokens.runs[t]


# ---------------------------------------------------------------------------
# Unbinarization


def expansion_table(rules: list[BinaryRule]) -> dict[str, BinaryRule]:
    """One defining rule per virtual symbol (any will do: names determine yields)."""
    table: dict[str, BinaryRule] = {}
    for r in rules:
        if r.origin < 0:
            table.setdefault(r.lhs, r)
    return table


def expand(binary: BinaryRule, table: dict[str, BinaryRule]) -> tuple[list, list[list]]:
    """The source sequence and carried target blocks a binary rule spans.

    Source items are words and slot numbers (real nonterminals, numbered left to
    right); each block is a list of words and slot numbers. Returns
    (source, blocks); a rule with a target side carries exactly one block.
    """
    source: list = []
    blocks: list[list] = []
    labels: list[str] = []
    _expand_into(binary, table, source, blocks, labels)
    return source, blocks


def _expand_into(binary, table, source, blocks, labels):
    carried: list[list] = []
    for child in binary.children:
        if isinstance(child, tuple):
            source.extend(child)
        elif is_virtual(child):
            sub_blocks: list[list] = []
            _expand_into(table[child], table, source, sub_blocks, labels)
            carried.extend(sub_blocks)
        else:
            slot = len(labels)
            labels.append(child)
            source.append(slot)
            carried.append([slot])
    if binary.target is None:
        blocks.extend(carried)
    else:
        blocks.append(assemble_target(binary.target, carried))


def assemble_target(target: tuple, carried) -> list:
    """One target block from a rule's target side: its words, with each block
    reference k replaced by the words of carried block k."""
    block: list = []
    for item in target:
        if isinstance(item, str):
            block.append(item)
        else:
            block.extend(carried[item])
    return block


def unbinarize_rule(top: BinaryRule, table: dict[str, BinaryRule], source_rules: list[Rule] | None = None) -> Rule:
    """The source rule a top binary rule (and the virtual rules below it) stands for.

    Features, alignment and tree come from `source_rules[top.origin]` when given;
    the right-hand sides and labels are rebuilt from the binary rules alone.
    """
    source: list = []
    blocks: list[list] = []
    labels: list[str] = []
    _expand_into(top, table, source, blocks, labels)
    if len(blocks) != 1:
        raise ValueError(f"top rule {top} does not assemble one target side")
    extra = {}
    if source_rules is not None and top.origin >= 0:
        original = source_rules[top.origin]
        extra = dict(scores=original.scores, alignment=original.alignment, counts=original.counts,
                     tree=original.tree, properties=original.properties)
    return Rule(top.lhs, tuple(source), tuple(blocks[0]), tuple(labels), **extra)


def unbinarize(grammar: BinaryGrammar) -> list[Rule]:
    """The source rules, rebuilt from the binary rules, in source-rule order (dropped rules omitted)."""
    table = expansion_table(grammar.rules)
    tops = sorted(grammar.top_rules(), key=lambda r: r.origin)
    return [unbinarize_rule(top, table, grammar.source_rules) for top in tops]


# ---------------------------------------------------------------------------
# Text format
#
# A header line `#cky-binary-grammar<TAB>{json}` (format version, strategy,
# report), then one binary rule per line, tab-separated:
#   lhs <TAB> children <TAB> target <TAB> origin
# Symbols are separated by single spaces. A nonterminal child is written
# `[LABEL]`, a virtual one `[<...>]` with its spaces written as U+2423 (␣), a
# terminal run as its words; the two children are separated by ` ||| `.
# Target: words, and `[k]` for a reference to carried block k; `*` for none.

_SPACE = "\u2423"


def _sym(symbol: str) -> str:
    return "[" + symbol.replace(" ", _SPACE) + "]"


def _unsym(text: str) -> str:
    return text[1:-1].replace(_SPACE, " ")


def format_binary_rule(rule: BinaryRule) -> str:
    children = " ||| ".join(" ".join(c) if isinstance(c, tuple) else _sym(c) for c in rule.children)
    if rule.target is None:
        target = "*"
    else:
        target = " ".join(t if isinstance(t, str) else f"[{t}]" for t in rule.target)
    return f"{_sym(rule.lhs)}\t{children}\t{target}\t{rule.origin}"


def parse_binary_rule(line: str, path: str = "<string>", line_number: int = 1) -> BinaryRule:
    fields = line.rstrip("\n").split("\t")
    if len(fields) != 4:
        raise ValueError(f"{path}:{line_number}: expected 4 tab-separated fields, got {len(fields)}")
    lhs, children_text, target_text, origin = fields
    children = []
    for part in children_text.split(" ||| "):
        part = part.strip()
        if part.startswith("[") and part.endswith("]") and " " not in part:
            children.append(_unsym(part))
        else:
            children.append(tuple(part.split()))
    target = None
    if target_text != "*":
        target = tuple(int(t[1:-1]) if t.startswith("[") and t.endswith("]") and t[1:-1].isdigit() else t
                       for t in target_text.split())
    return BinaryRule(_unsym(lhs), tuple(children), target, int(origin))


def write_binary_grammar(grammar: BinaryGrammar, path: str | os.PathLike) -> None:
    header = {"format_version": FORMAT_VERSION, "strategy": grammar.strategy, "report": grammar.report}
    with open_text(path, "w") as out:
        out.write("#cky-binary-grammar\t" + json.dumps(header, ensure_ascii=False) + "\n")
        for rule in grammar.rules:
            out.write(format_binary_rule(rule) + "\n")


def read_binary_rules(path: str | os.PathLike) -> tuple[dict, list[BinaryRule]]:
    """The header and the binary rules of a binary grammar file."""
    path = os.fspath(path)
    rules = []
    with open_text(path) as lines:
        first = lines.readline()
        if not first.startswith("#cky-binary-grammar\t"):
            raise ValueError(f"{path}:1: not a cky binary grammar (missing header)")
        header = json.loads(first.split("\t", 1)[1])
        for line_number, line in enumerate(lines, start=2):
            if line.strip():
                rules.append(parse_binary_rule(line, path, line_number))
    return header, rules
