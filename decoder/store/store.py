"""`GrammarStore`: a compiled grammar store opened with every array memory-mapped.

    store = GrammarStore.open("model/store")
    view = store.sentence_view("el perro come".split())
    for start, end, run in view.runs:              # spans that are a known terminal run
        lexical = store.rules_for_single(run)        # rule ids (one child: the run)
    store.rules_for_pair(left_symbol, right_symbol)  # rule ids with these two children

Opening reads meta.json and the .npy headers, maps the arrays and the three text
files, and checks sizes, offsets and every id array's range in one vectorized pass
(docs/store-format.md, "Validation at open"), so a damaged store is a StoreError at
open, never a crash later. The vocabularies and symbol names are decoded on first use. All raw arrays are attributes named as in
docs/store-format.md (`store.rule_lhs`, `store.pair_keys`, ...), read-only.
"""
from __future__ import annotations

import json
import mmap
import os
from functools import cached_property
from typing import NamedTuple, Sequence

import numpy as np

from ..binarize import BinaryRule
from ..binarize.binary_grammar import assemble_target
from ..grammar import Rule
from .format import (ARRAYS, FEATURE_LOG_BOUND, FLAGS, FORMAT_VERSION, ID_RANGES, META_FILE, NONTERMINALS_FILE, OFFSETS, OOV_ID,
                     SORTED_KEYS, SOURCE_VOCAB_FILE, TARGET_VOCAB_FILE, TEXT_FILES, TREES_FILE, StoreError)
from .runs import match_run_array

EMPTY_RULES = np.zeros(0, dtype=np.int32)


class SentenceView:
    """One sentence against a store: its word ids and the spans that are terminal runs."""

    def __init__(self, store: "GrammarStore", words: Sequence[str]):
        self.store = store
        self.words = list(words)
        self.word_ids = store.source_word_ids(self.words)  # int32, OOV_ID for unknown words
        self.runs = store.match_run_array(self.word_ids)  # int32[k, 3]: start, end (exclusive), run symbol

    def __len__(self) -> int:
        return len(self.words)

    def lexical_rules(self):
        """(start, end, run symbol, rule ids) for every matched run that has one-child rules."""
        for start, end, symbol in self.runs.tolist():
            rules = self.store.rules_for_single(symbol)
            if len(rules):
                yield start, end, symbol, rules


class GrammarStore:
    """A compiled grammar store (the binarized rules of one rule table, docs/store-format.md),
    every array memory-mapped and read-only; open one with `GrammarStore.open(path)`.

    Symbols are ids: nonterminals (real labels first, then the virtual ones binarization made)
    are 0 .. n_nonterminals - 1, and a run of source words is n_nonterminals + its run index.
    Rules are ids into the `rule_*` arrays; a top rule's `rule_origin` is its source rule."""

    def __init__(self, path: str, meta: dict, arrays: dict[str, np.ndarray], trees: np.ndarray,
                 texts: dict[str, mmap.mmap | bytes]):
        self.path = path
        self._texts = texts  # the text files, mapped at open, decoded on first use
        self.meta = meta
        # plain ndarray views of the memory maps: cheaper to index than np.memmap, and what numba
        # and Cython expect; each keeps its map open through `.base`
        for name, array in arrays.items():
            setattr(self, name, np.asarray(array))
        self.trees_bytes = np.asarray(trees)
        self.n_real_nonterminals = int(meta["n_real_nonterminals"])
        self.n_nonterminals = int(meta["n_nonterminals"])
        self.n_runs = int(meta["n_runs"])
        self.n_symbols = self.n_nonterminals + self.n_runs
        self.n_source_rules = int(meta["n_source_rules"])
        self.max_run_length = int(meta["max_run_length"])
        self.feature_names = list(meta["feature_names"])
        self.strategy = meta["strategy"]

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike) -> "GrammarStore":
        """Open a store directory, memory-mapping every array; StoreError if it is missing,
        corrupt, or of another format version."""
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise StoreError(path, "no grammar store here (not a directory)")
        meta_path = os.path.join(path, META_FILE)
        if not os.path.isfile(meta_path):
            raise StoreError(path, f"missing {META_FILE}: not a grammar store, or its compilation did not finish")
        try:
            with open(meta_path, encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise StoreError(meta_path, f"unreadable meta.json: {e}") from None
        if not isinstance(meta, dict):
            raise StoreError(meta_path, "meta.json is not a JSON object")
        version = meta.get("format_version")
        if version != FORMAT_VERSION:
            raise StoreError(path, f"store format version {version!r}, but this code reads version "
                                   f"{FORMAT_VERSION}: recompile it with `cky compile`")
        missing = [k for k in ("n_real_nonterminals", "n_nonterminals", "n_runs", "n_rules", "n_source_rules",
                               "max_run_length", "feature_names", "strategy") if k not in meta]
        if missing:
            raise StoreError(meta_path, f"meta.json lacks {', '.join(missing)}")
        arrays = {name: _load_array(path, name, dtype, length(meta) if length else None)
                  for name, (dtype, length) in ARRAYS.items()}
        texts = {name: _map_text_file(path, name, meta) for name in TEXT_FILES}
        trees_path = os.path.join(path, TREES_FILE)
        if not os.path.isfile(trees_path):
            raise StoreError(trees_path, "missing file")
        trees_size = os.path.getsize(trees_path)
        _validate(path, meta, arrays, texts, trees_size)
        # mapped (not read when needed): a store compiled over this one later must not change what we read
        trees = np.memmap(trees_path, dtype=np.uint8, mode="r") if trees_size else np.zeros(0, np.uint8)
        return cls(path, meta, arrays, trees, texts)

    def __len__(self) -> int:
        """The number of binary rules."""
        return len(self.rule_lhs)

    def __repr__(self) -> str:
        """Its path and sizes, on one line."""
        return (f"GrammarStore({self.path!r}: {len(self):,} binary rules from {self.n_source_rules:,} source rules, "
                f"{self.n_nonterminals:,} nonterminals, {self.n_runs:,} runs, strategy {self.strategy})")

    # -- vocabularies and names (read on first use) ---------------------------------------------

    @cached_property
    def nonterminal_names(self) -> list[str]:
        """Every nonterminal's name, by id (real labels, then virtual ones such as "<NP+VP>")."""
        return self._lines(NONTERMINALS_FILE)

    def nonterminal_name(self, symbol: int) -> str:
        """One nonterminal's name, read from its line alone (a derivation names a few virtual
        symbols; decoding all of a large grammar's names would cost seconds)."""
        ends = self._nonterminal_line_ends
        if not 0 <= symbol < len(ends):
            raise IndexError(f"nonterminal {symbol}: the store has {len(ends)}")
        start = int(ends[symbol - 1]) + 1 if symbol else 0
        data = self._texts[NONTERMINALS_FILE]
        try:
            return bytes(data[start:int(ends[symbol])]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise StoreError(os.path.join(self.path, NONTERMINALS_FILE), f"line {symbol + 1}: not UTF-8: {e}") from None

    @cached_property
    def _nonterminal_line_ends(self) -> np.ndarray:
        data = self._texts[NONTERMINALS_FILE]
        return np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))

    @cached_property
    def source_vocab(self) -> list[str]:
        """Every source word of a rule, by id (escaped as in the rule table)."""
        return self._lines(SOURCE_VOCAB_FILE)

    @cached_property
    def target_vocab(self) -> list[str]:
        """Every target word of a rule, by id."""
        return self._lines(TARGET_VOCAB_FILE)

    @cached_property
    def source_word_index(self) -> dict[str, int]:
        """Source word -> id (the inverse of source_vocab)."""
        return {w: i for i, w in enumerate(self.source_vocab)}

    @cached_property
    def real_label_ids(self) -> dict[str, int]:
        """Real nonterminal label -> id (decodes only the first n_real lines of nonterminals.txt)."""
        labels = self._lines(NONTERMINALS_FILE, self.n_real_nonterminals)
        return {name: i for i, name in enumerate(labels)}

    def symbol_id(self, name: str) -> int:
        """The id of a nonterminal name (real or virtual); KeyError if it is in no rule."""
        if not name.startswith("<"):
            return self.real_label_ids[name]
        return self._nonterminal_index[name]

    @cached_property
    def _nonterminal_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.nonterminal_names)}

    def symbol_name(self, symbol: int) -> str:
        """A nonterminal's name, or a run's words joined by spaces and quoted."""
        if symbol < self.n_nonterminals:
            return self.nonterminal_name(symbol)
        return '"' + " ".join(self.run_words_of(symbol)) + '"'

    def is_run(self, symbol: int) -> bool:
        """Whether a symbol id is a run of source words (not a nonterminal)."""
        return symbol >= self.n_nonterminals

    def run_words_of(self, symbol: int) -> tuple[str, ...]:
        """The source words of a run symbol (n_nonterminals + run index)."""
        run = symbol - self.n_nonterminals
        ids = self.run_words[self.run_offsets[run]:self.run_offsets[run + 1]]
        return tuple(self.source_vocab[i] for i in ids)

    def _lines(self, file_name: str, first: int | None = None) -> list[str]:
        """The lines of a text file of the store (only the first `first` if given)."""
        data = self._texts[file_name]
        end = len(data)
        if first is not None:
            end = 0
            for _ in range(first):
                end = data.find(b"\n", end) + 1
        try:
            text = data[:end].decode("utf-8")
        except UnicodeDecodeError as e:
            raise StoreError(os.path.join(self.path, file_name), f"not UTF-8: {e}") from None
        lines = text.split("\n")
        lines.pop()  # after the last newline (the file was checked at open to end with one)
        return lines

    # -- per sentence ---------------------------------------------------------------------------

    def source_word_ids(self, words: Sequence[str]) -> np.ndarray:
        """int32 ids of the words; OOV_ID (-1) for a word in no rule."""
        index = self.source_word_index
        return np.fromiter((index.get(w, OOV_ID) for w in words), dtype=np.int32, count=len(words))

    def sentence_view(self, words: Sequence[str]) -> SentenceView:
        """The sentence's word ids and the spans of it that are terminal runs (SentenceView)."""
        return SentenceView(self, words)

    def match_run_array(self, word_ids) -> np.ndarray:
        """int32[k, 3]: (start, end, run symbol) for every span word_ids[start:end] that is a run,
        sorted by (start, end); end is exclusive and the run symbol is n_nonterminals + run index."""
        return match_run_array(np.asarray(word_ids, dtype=np.int32), self.run_hash_keys, self.run_hash_runs,
                               self.run_offsets, self.run_words, self.max_run_length, self.n_nonterminals)

    def match_runs(self, word_ids) -> list[tuple[int, int, int]]:
        """`match_run_array` as a list of (start, end, run symbol) tuples."""
        return [tuple(row) for row in self.match_run_array(word_ids).tolist()]

    # -- rule look-ups --------------------------------------------------------------------------

    def pair_range(self, left: int, right: int) -> tuple[int, int]:
        """[lo, hi) into `pair_rules` of the rules whose children are (left, right); (0, 0) if none."""
        key = left * self.n_symbols + right
        i = int(np.searchsorted(self.pair_keys, key))
        if i < len(self.pair_keys) and self.pair_keys[i] == key:
            return int(self.pair_offsets[i]), int(self.pair_offsets[i + 1])
        return 0, 0

    def pair_ranges(self, lefts, rights) -> tuple[np.ndarray, np.ndarray]:
        """`pair_range` for arrays of child pairs at once: int64 arrays lo, hi (lo == hi: no rules)."""
        keys = np.asarray(lefts, dtype=np.int64) * self.n_symbols + np.asarray(rights, dtype=np.int64)
        return _ranges(self.pair_keys, self.pair_offsets, keys)

    def single_ranges(self, children) -> tuple[np.ndarray, np.ndarray]:
        """`single_range` for an array of children at once."""
        return _ranges(self.single_keys, self.single_offsets, np.asarray(children, dtype=np.int64))

    def rules_for_pair(self, left: int, right: int) -> np.ndarray:
        """int32 ids of the binary rules with children (left, right)."""
        lo, hi = self.pair_range(left, right)
        return self.pair_rules[lo:hi] if hi > lo else EMPTY_RULES

    def pair_keys_with_left(self, left: int) -> tuple[int, int]:
        """[lo, hi) into `pair_keys` of the keys whose left child is `left` (right = key - left * n_symbols)."""
        lo, hi = np.searchsorted(self.pair_keys, [left * self.n_symbols, (left + 1) * self.n_symbols])
        return int(lo), int(hi)

    def single_range(self, child: int) -> tuple[int, int]:
        """[lo, hi) into `single_rules` of the one-child rules of `child`; (0, 0) if none."""
        i = int(np.searchsorted(self.single_keys, child))
        if i < len(self.single_keys) and self.single_keys[i] == child:
            return int(self.single_offsets[i]), int(self.single_offsets[i + 1])
        return 0, 0

    def rules_for_single(self, child: int) -> np.ndarray:
        """int32 ids of the one-child rules (lexical for a run symbol, unary for a nonterminal)."""
        lo, hi = self.single_range(child)
        return self.single_rules[lo:hi] if hi > lo else EMPTY_RULES

    # -- one rule -------------------------------------------------------------------------------

    def children(self, rule: int) -> tuple[int, ...]:
        """A binary rule's child symbols: one (a lexical or unary rule) or two."""
        c0, c1 = int(self.rule_child0[rule]), int(self.rule_child1[rule])
        return (c0,) if c1 < 0 else (c0, c1)

    def target_ids(self, rule: int) -> np.ndarray:
        """The raw target items of a rule: word id >= 0, block reference k as -1-k."""
        return self.rule_target[self.rule_target_offsets[rule]:self.rule_target_offsets[rule + 1]]

    def target_side(self, rule: int) -> tuple | None:
        """Target words (str) and block references (int k), as in BinaryRule.target; None if the
        rule carries its children's blocks (monolingual virtual)."""
        if self.rule_carries[rule]:
            return None
        vocab = self.target_vocab
        return tuple(vocab[i] if i >= 0 else -1 - i for i in self.target_ids(rule).tolist())

    def rule_features(self, rule: int) -> np.ndarray:
        """float32[F]: the log scores of a top rule's source rule; zeros for a virtual rule.
        (`store.features` is the whole float32[n_source_rules, F] array.)"""
        origin = int(self.rule_origin[rule])
        if origin < 0:
            return np.zeros(len(self.feature_names), dtype=np.float32)
        return np.asarray(self.features[origin])

    def binary_rule(self, rule: int) -> BinaryRule:
        """The rule with names, as `decoder.binarize` made it."""
        children = tuple(self.run_words_of(c) if self.is_run(c) else self.nonterminal_names[c]
                         for c in self.children(rule))
        return BinaryRule(self.nonterminal_names[self.rule_lhs[rule]], children, self.target_side(rule),
                          int(self.rule_origin[rule]))

    def tree(self, source_rule: int) -> str | None:
        """The target tree fragment of a source rule, None if it has none."""
        lo, hi = self.tree_offsets[source_rule], self.tree_offsets[source_rule + 1]
        return bytes(self.trees_bytes[lo:hi]).decode("utf-8") if hi > lo else None

    def top_rule(self, source_rule: int) -> int:
        """The id of a source rule's top rule, -1 if the rule was dropped."""
        return int(self.source_top_rule[source_rule])

    def source_rule(self, top_rule: int) -> Rule:
        """The source rule a top rule stands for, rebuilt from the binary rules (scores are the
        exp of the stored log features; the tree fragment comes along)."""
        origin = int(self.rule_origin[top_rule])
        if origin < 0:
            raise ValueError(f"rule {top_rule} is a virtual rule, not a top rule")
        source: list = []
        labels: list[str] = []
        blocks = self._expand(top_rule, source, labels)
        if len(blocks) != 1:
            raise ValueError(f"top rule {top_rule} does not assemble one target side")
        scores = tuple(float(x) for x in np.exp(self.features[origin].astype(np.float64)))
        return Rule(self.nonterminal_names[self.rule_lhs[top_rule]], tuple(source), tuple(blocks[0]),
                    tuple(labels), scores, tree=self.tree(origin))

    def _expand(self, rule: int, source: list, labels: list) -> list[list]:
        """Append the source side under `rule` to `source`; return the target blocks it carries."""
        carried: list[list] = []
        for child in self.children(rule):
            if self.is_run(child):
                source.extend(self.run_words_of(child))
            elif self.symbol_is_virtual[child]:
                carried.extend(self._expand(int(self.symbol_rule[child]), source, labels))
            else:
                slot = len(labels)
                labels.append(self.nonterminal_names[child])
                source.append(slot)
                carried.append([slot])
        target = self.target_side(rule)
        if target is None:
            return carried
        return [assemble_target(target, carried)]


def _ranges(sorted_keys: np.ndarray, offsets: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    index = np.searchsorted(sorted_keys, keys)
    found = index < len(sorted_keys)
    found[found] = sorted_keys[index[found]] == keys[found]
    lo = np.where(found, offsets[np.minimum(index, len(offsets) - 1)], 0)
    hi = np.where(found, offsets[np.minimum(index + 1, len(offsets) - 1)], 0)
    return lo, hi


def _load_array(path: str, name: str, dtype: np.dtype, length: int | None) -> np.ndarray:
    file_path = os.path.join(path, name + ".npy")
    if not os.path.isfile(file_path):
        raise StoreError(file_path, "missing array")
    try:
        array = np.load(file_path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise StoreError(file_path, f"corrupt array ({e})") from None
    if array.dtype != dtype:
        raise StoreError(file_path, f"dtype {array.dtype}, expected {dtype}")
    if length is not None and (array.ndim == 0 or array.shape[0] != length):
        raise StoreError(file_path, f"shape {array.shape}, expected first dimension {length}")
    return array


class StoreCounts(NamedTuple):
    """The sizes that the id arrays of a store are checked against (format.ID_RANGES)."""
    n_nonterminals: int
    n_runs: int
    n_symbols: int
    n_rules: int
    n_source_rules: int
    n_source_words: int
    n_target_words: int
    max_carried: int


def _map_text_file(path: str, name: str, meta: dict) -> mmap.mmap | bytes:
    """A text file of the store, memory-mapped (a store compiled over this one later cannot change
    what we read), its size checked against meta.json. Stores compiled before meta.json recorded
    sizes are checked by line count and ids only."""
    file_path = os.path.join(path, name)
    try:
        with open(file_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except FileNotFoundError:
        raise StoreError(file_path, "missing file") from None
    except OSError as e:
        raise StoreError(file_path, f"unreadable: {e.strerror}") from None
    expected = meta.get("text_file_bytes", {}).get(name)
    if expected is not None and size != expected:
        raise StoreError(file_path, f"{size} bytes, expected {expected} (truncated or changed?)")
    if size and data[size - 1:] != b"\n":
        raise StoreError(file_path, "does not end with a newline (truncated?)")
    return data


def _count_lines(data) -> int:
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10)) if len(data) else 0


def _validate(path: str, meta: dict, arrays: dict[str, np.ndarray], texts: dict[str, bytes], trees_size: int):
    """Check that the files belong together and that no id points outside the array it indexes:
    lengths from the headers, then one vectorized pass (min, max, order) over each index array."""

    def fail(name: str, message: str):
        file_name = name if name.endswith((".txt", ".bin", ".json")) else name + ".npy"
        raise StoreError(os.path.join(path, file_name), message)

    # Line counts: from meta.json when it also records the files' sizes (checked already; counting
    # the lines of a large nonterminals.txt would cost more than all other checks), else counted.
    line_counts = {}
    for name, key in ((NONTERMINALS_FILE, "n_nonterminals"), (SOURCE_VOCAB_FILE, "n_source_words"),
                      (TARGET_VOCAB_FILE, "n_target_words")):
        if key in meta and name in meta.get("text_file_bytes", {}):
            line_counts[name] = int(meta[key])
            continue
        line_counts[name] = _count_lines(texts[name])
        if key in meta and line_counts[name] != meta[key]:
            fail(name, f"{line_counts[name]} lines, expected {meta[key]} (truncated?)")

    n_features = len(meta["feature_names"])
    if not (arrays["features"].ndim == 2 and arrays["features"].shape[1] == n_features):
        fail("features", f"shape {arrays['features'].shape}, expected ({meta['n_source_rules']}, {n_features})")
    for kind in ("pair", "single"):
        keys, offsets = arrays[f"{kind}_keys"], arrays[f"{kind}_offsets"]
        if f"n_{kind}_keys" in meta and len(keys) != meta[f"n_{kind}_keys"]:
            fail(f"{kind}_keys", f"length {len(keys)}, expected {meta[f'n_{kind}_keys']}")
        if len(offsets) != len(keys) + 1:
            fail(f"{kind}_offsets", f"length {len(offsets)}, expected {len(keys) + 1}")
    for name, indexed in OFFSETS.items():
        offsets = arrays[name]
        end = trees_size if indexed == TREES_FILE else len(arrays[indexed])
        if int(offsets[-1]) != end:
            what = "bytes (truncated?)" if indexed == TREES_FILE else "items"
            fail(indexed, f"{end} {what}, but {name} ends at {int(offsets[-1])}")
        if offsets[0] != 0 or not (offsets[1:] >= offsets[:-1]).all():
            fail(name, "offsets do not start at 0 and increase (corrupt)")
    for name in SORTED_KEYS:
        keys = arrays[name]
        if not (keys[1:] > keys[:-1]).all():
            fail(name, "keys are not sorted (corrupt)")
    if not (arrays["run_hash_keys"][1:] >= arrays["run_hash_keys"][:-1]).all():
        fail("run_hash_keys", "keys are not sorted (corrupt)")

    n_nonterminals, n_runs = int(meta["n_nonterminals"]), int(meta["n_runs"])
    carried = arrays["symbol_carried"]
    counts = StoreCounts(n_nonterminals, n_runs, n_nonterminals + n_runs, int(meta["n_rules"]),
                         int(meta["n_source_rules"]), line_counts[SOURCE_VOCAB_FILE],
                         line_counts[TARGET_VOCAB_FILE], int(carried.max()) if len(carried) else 0)
    if len(carried) and carried.min() < 0:
        fail("symbol_carried", "negative block counts (corrupt)")
    for name, bounds in ID_RANGES.items():
        ids = arrays[name]
        if len(ids):
            lo, hi = bounds(counts)
            smallest, largest = int(ids.min()), int(ids.max())
            if smallest < lo or largest >= hi:
                vocabulary = {"run_words": SOURCE_VOCAB_FILE, "rule_target": TARGET_VOCAB_FILE}.get(name)
                fail(name, f"ids from {smallest} to {largest}, outside [{lo}, {hi}): corrupt" +
                     (f", or {vocabulary} lost lines" if vocabulary else ""))

    for name in FLAGS:
        flags = arrays[name]
        if len(flags) and int(flags.max()) > 1:
            fail(name, f"values up to {int(flags.max())} in an array of 0/1 flags (corrupt)")
    # Real labels are the first n_real_nonterminals symbols, virtual ones the rest; each virtual symbol
    # names a rule that makes it, a real one none (docs/store-format.md).
    n_real = int(meta["n_real_nonterminals"])
    virtual, symbol_rule = arrays["symbol_is_virtual"], arrays["symbol_rule"]
    if not 0 <= n_real <= n_nonterminals:
        fail(META_FILE, f"n_real_nonterminals = {n_real}, outside [0, {n_nonterminals}] (corrupt)")
    if virtual[:n_real].any() or not virtual[n_real:].all():
        fail("symbol_is_virtual", f"the first {n_real} symbols (the real labels) must be 0, the others 1 (corrupt)")
    if (symbol_rule[:n_real] != -1).any() or (symbol_rule[n_real:] < 0).any() or (
            arrays["rule_lhs"][symbol_rule[n_real:]] != np.arange(n_real, n_nonterminals)).any():
        fail("symbol_rule", "a real label with a rule, or a virtual symbol without the rule that makes it (corrupt)")

    features = arrays["features"]
    if features.size:  # min and max: NaN propagates into them, so one comparison each catches it too
        smallest, largest = float(features.min()), float(features.max())
        if not (smallest >= -FEATURE_LOG_BOUND and largest <= FEATURE_LOG_BOUND):
            bad = features[~(np.abs(features) <= FEATURE_LOG_BOUND)]
            fail("features", f"value {float(bad[0])!r} (of {bad.size:,} not finite or beyond +-{FEATURE_LOG_BOUND:g}, "
                             f"which no log score reaches): corrupt")
