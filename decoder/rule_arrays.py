"""A Moses rule table as integer arrays: what `cky compile` reads (no Python object per rule).

    table = read_rule_arrays("rules.gz")
    len(table), table.words[table.source[table.source_offsets[0]]], table.scores[0]

`read_rule_arrays` parses the table's text (plain or gzip) in compiled code
(decoder._ext._rule_reader) into one row per rule: the LHS as a label id, each side as word
ids (>= 0) and slots (slot k as -1 - k; slot k is the k-th source nonterminal, and a target
slot names the source slot it is linked to, as in decoder.grammar.Rule), each slot's label
id, the scores (one float64 matrix: every rule must have as many as the first), the terminal
links and the tree fragment (UTF-8). Rows are what decoder.grammar.read_rules would give,
rule for rule (`table.rule(i)` rebuilds the Rule; counts and other properties are not kept):
a line the compiled reader does not read the usual way is read by decoder.grammar's own code,
so every error is the same: GrammarFormatError naming file and line for a malformed line or
another number of scores, InputError for bytes that are not UTF-8 or a truncated gzip stream.
The binarization kernel reads the rows directly (RuleBinarizer.use_table).
"""
from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass

import numpy as np

from ._ext import compiled_module
from .errors import GrammarFormatError, InputError
from .grammar import NUL_IN_RULE, Rule, parse_rule, tree_fragment_error

_rule_reader = compiled_module("_rule_reader")
_rule_table = compiled_module("_rule_table")

# Bytes decompressed per call (large: each call costs Python work, each byte C work only).
BLOCK_SIZE = 1 << 22


@dataclass
class RuleTableArrays:
    """The rules of a table as rows of integer arrays (see the module docstring).

    Row i: `lhs[i]` (label id); `source[source_offsets[i]:source_offsets[i + 1]]` and the same of
    `target` (word id >= 0, slot k as -1 - k); `rule_labels[label_offsets[i]:...]` (label id per
    slot); `scores[i]`; `alignment[alignment_offsets[i]:...]` (sorted (source position, target
    position) terminal links); `trees[tree_offsets[i]:tree_offsets[i + 1]]` (the tree fragment in
    UTF-8, empty if none); `line_numbers[i]` (its line in the file)."""

    path: str
    words: list[str]  # word id -> word (both sides)
    labels: list[str]  # label id -> label (LHS and slots)
    lhs: np.ndarray  # int32[n]
    source_offsets: np.ndarray  # int64[n + 1]
    source: np.ndarray  # int32
    target_offsets: np.ndarray  # int64[n + 1]
    target: np.ndarray  # int32
    label_offsets: np.ndarray  # int64[n + 1]
    rule_labels: np.ndarray  # int32
    scores: np.ndarray  # float64[n, n_scores]
    alignment_offsets: np.ndarray  # int64[n + 1]
    alignment: np.ndarray  # int32[m, 2]
    tree_offsets: np.ndarray  # int64[n + 1]
    trees: bytes
    line_numbers: np.ndarray  # int64[n]

    def __len__(self) -> int:
        return len(self.lhs)

    @property
    def n_scores(self) -> int:
        return self.scores.shape[1]

    def labels_look_virtual(self) -> bool:
        """Whether a label is spelled like a virtual name ("<..."): the binarization kernel's
        arrays cannot tell such a label from a virtual symbol (see decoder.binarize.binarize)."""
        return any(label.startswith("<") for label in self.labels)

    def rule(self, i: int) -> Rule:
        """Row i as the Rule decoder.grammar.read_rules reads (without its counts and properties)."""
        words, labels = self.words, self.labels

        def side(items):
            return tuple(words[x] if x >= 0 else -1 - x for x in items.tolist())

        tree = self.trees[self.tree_offsets[i]:self.tree_offsets[i + 1]].decode("utf-8")
        return Rule(labels[self.lhs[i]],
                    side(self.source[self.source_offsets[i]:self.source_offsets[i + 1]]),
                    side(self.target[self.target_offsets[i]:self.target_offsets[i + 1]]),
                    tuple(labels[x] for x in self.rule_labels[self.label_offsets[i]:self.label_offsets[i + 1]].tolist()),
                    tuple(self.scores[i].tolist()),
                    tuple(map(tuple, self.alignment[self.alignment_offsets[i]:self.alignment_offsets[i + 1]].tolist())),
                    tree=tree or None)

    def rules(self) -> list[Rule]:
        return [self.rule(i) for i in range(len(self))]

    def subset(self, rows) -> "RuleTableArrays":
        """The table of the given rows (indices, in the order given)."""
        rows = np.asarray(rows, dtype=np.int64)
        source_offsets, source = _take_ragged(self.source_offsets, self.source, rows)
        target_offsets, target = _take_ragged(self.target_offsets, self.target, rows)
        label_offsets, rule_labels = _take_ragged(self.label_offsets, self.rule_labels, rows)
        alignment_offsets, alignment = _take_ragged(self.alignment_offsets, self.alignment, rows)
        tree_offsets, trees = _take_ragged(self.tree_offsets, np.frombuffer(self.trees, dtype=np.uint8), rows)
        return RuleTableArrays(self.path, self.words, self.labels, self.lhs[rows], source_offsets, source,
                               target_offsets, target, label_offsets, rule_labels, self.scores[rows],
                               alignment_offsets, alignment, tree_offsets, trees.tobytes(), self.line_numbers[rows])


def _take_ragged(offsets: np.ndarray, items: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and items of the given rows of a ragged array."""
    lengths = offsets[1:][rows] - offsets[:-1][rows]
    new_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    gather = np.repeat(offsets[:-1][rows] - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return new_offsets, items[gather]


def read_rule_arrays(path: str | os.PathLike) -> RuleTableArrays:
    """The rules of a Moses rule table (plain or gzip) as a RuleTableArrays. Blank lines are
    skipped. Errors, as decoder.grammar.read_rules(path, uniform_scores=True) raises them:
    GrammarFormatError (file, line) for a malformed line or a rule with another number of scores
    than the first, InputError (file, line) for a line that is not UTF-8 or a truncated or corrupt
    gzip stream, OSError."""
    path = os.fspath(path)

    def python_line(line: str, line_number: int) -> Rule | None:
        # decoder.grammar.read_rules' reading of one line
        if not line.strip():
            return None
        rule = _rule_table.read_rule(line, Rule)
        return rule if rule is not None else parse_rule(line, path, line_number)

    def not_utf8(raw: bytes, line_number: int) -> None:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(path, f"not UTF-8 ({error.reason} at byte {error.start + 1} of the line)",
                             line_number) from None
        raise AssertionError(f"{path}:{line_number} is UTF-8")

    def score_count_error(n: int, line_number: int, n_first: int, first_line: int) -> None:
        raise GrammarFormatError(path, line_number, f"{n} scores, but the rule on line {first_line} has {n_first}")

    reader = _rule_reader.RuleTableReader(path, python_line, not_utf8, score_count_error)
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as stream:
        rest, nul_line = b"", None
        while True:
            # read1, not read: a read that meets the end of a truncated stream raises and drops the data
            # it had decompressed, so the error would be reported at a line before the damage
            parts, size, damage = [], 0, None
            while size < BLOCK_SIZE:
                try:
                    part = stream.read1(BLOCK_SIZE - size)
                except (EOFError, zlib.error, gzip.BadGzipFile) as error:
                    damage = error
                    break
                if not part:
                    break
                parts.append(part)
                size += len(part)
            block = b"".join(parts)
            data = rest + block if rest else block
            nul = data.find(b"\0")
            if nul >= 0:  # the whole lines before its line are read first: an error there comes first
                reader.feed(data[:data.rfind(b"\n", 0, nul) + 1], False)
                nul_line = reader.line_number + 1
                break
            if damage is not None:  # the whole lines before it are read, then the line it cuts is named
                reader.feed(data, False)
                raise InputError(path, f"truncated or corrupt gzip data ({damage or type(damage).__name__})",
                                 reader.line_number + 1) from None
            used = reader.feed(data, not block)
            rest = data[used:]
            if not block:
                break
    arrays = reader.arrays()
    bad = unbalanced_tree_fragments(arrays["trees"], arrays["tree_offsets"])
    if len(bad):
        tree = arrays["trees"][arrays["tree_offsets"][bad[0]]:arrays["tree_offsets"][bad[0] + 1]].decode("utf-8")
        raise GrammarFormatError(path, int(arrays["line_numbers"][bad[0]]),
                                 f"{{{{Tree {tree}}}}}: {tree_fragment_error(tree)}")
    if nul_line is not None:
        raise GrammarFormatError(path, nul_line, NUL_IN_RULE)
    return RuleTableArrays(path, **arrays)


def unbalanced_tree_fragments(trees: bytes, offsets: np.ndarray, block: int = 1 << 24) -> np.ndarray:
    """The indices of the fragments `trees[offsets[i]:offsets[i + 1]]` that are not one bracketed tree
    (decoder.grammar.tree_fragment_error; an empty fragment is no fragment), in order, computed with
    numpy over blocks of about `block` bytes: the bracket depth at every byte, relative to the depth
    before the fragment, must stay above 0 until its last byte, a "]" that brings it back to 0."""
    data = np.frombuffer(trees, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    bad = []
    first = 0
    while first < len(offsets) - 1:
        last = int(np.searchsorted(offsets, offsets[first] + block, side="right")) - 1
        last = min(max(last, first + 1), len(offsets) - 1)  # at least one fragment per block
        starts, ends = offsets[first:last], offsets[first + 1:last + 1]
        lengths = ends - starts
        chunk = data[starts[0]:ends[-1]]
        step = (chunk == ord("[")).astype(np.int32) - (chunk == ord("]"))
        depth = np.cumsum(step, dtype=np.int32)
        present = lengths > 0
        if present.any():
            local = (starts - starts[0])[present]
            size = lengths[present]
            before = np.where(local > 0, depth[np.maximum(local - 1, 0)], 0)
            relative = depth - np.repeat(before, size)
            closes = local + size - 1
            wrong = (chunk[local] != ord("[")) | (chunk[closes] != ord("]")) | (relative[closes] != 0)
            wrong |= np.minimum.reduceat(relative, local) < 0
            wrong |= np.add.reduceat((relative == 0).astype(np.int32), local) != 1
            bad.append(first + np.flatnonzero(present)[wrong])
        first = last
    return np.concatenate(bad) if bad else np.zeros(0, dtype=np.int64)
