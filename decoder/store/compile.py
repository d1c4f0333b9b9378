"""Compile a binarized grammar into the arrays of docs/store-format.md and save them.

From a `BinaryRuleArrays` (what `cky compile` makes: `binarize(..., arrays=True)`) no Python
work is done per binary rule: symbols are renumbered and rows sorted with numpy. From a
`BinaryGrammar` (the reference path) the only per-rule Python work is interning names into
ids (dict look-ups in comprehensions). Both give the same columns (`RuleColumns`), from which
one function makes the store, so the two paths make byte-identical stores.
"""
from __future__ import annotations

import contextlib
import ctypes
import datetime
import errno
import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from ..binarize import SYMBOL_KINDS, BinaryGrammar, BinaryRuleArrays
from ..errors import OutputError
from ..outputs import final_name, remove_stale_temporaries, temporary_name
from ..rule_arrays import RuleTableArrays
from .format import (ARRAYS, FORMAT_VERSION, META_FILE, NONTERMINALS_FILE, SOURCE_VOCAB_FILE,
                     TARGET_VOCAB_FILE, TREES_FILE, StoreError)
from .runs import hash_runs

log = logging.getLogger("cky.compile")

MOSES_LOG_OF_ZERO = -100.0  # what Rule.log_scores (and Moses) use for a score of 0


@dataclass
class CompiledGrammar:
    """A store in memory, ready to save."""

    arrays: dict[str, np.ndarray]
    nonterminals: list[str]
    source_vocab: list[str]
    target_vocab: list[str]
    trees: bytes
    meta: dict
    # store rule id -> index of the rule in `grammar.rules` (the store sorts rules by key)
    rule_order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


@dataclass
class RuleColumns:
    """The binary rules as columns of ids, in rule order, before the store renumbers and sorts them.

    `symbols` are the distinct lhs and child objects (labels and virtual names as str, runs as
    tuples) in order of first appearance: the lhs column first, then child0, then child1; the
    first `n_lhs_names` are the lhs ones. Children and lhs are indices into `symbols` (child1
    -1: one child). Target rows: word ids into `target_words` (in order of first appearance),
    -1 - k for carried block k; `carries` 1 for a monolingual virtual rule (empty row)."""

    symbols: list
    n_lhs_names: int
    is_run: np.ndarray  # bool, per symbol
    is_virtual: np.ndarray  # bool, per symbol
    lhs: np.ndarray  # int64
    child0: np.ndarray  # int64
    child1: np.ndarray  # int64
    origin: np.ndarray  # int64
    carries: np.ndarray  # uint8
    target_lengths: np.ndarray  # int64
    target_items: np.ndarray  # int32
    target_words: list[str]


def compile_grammar(grammar: BinaryGrammar | BinaryRuleArrays, feature_names: list[str] | None = None,
                    source_table: str | None = None, filter_path: str | None = None) -> CompiledGrammar:
    """The store arrays, vocabularies and meta.json of a binarized grammar (nothing is written).
    `feature_names` default to f0, f1, ...; `source_table` and `filter_path` go to meta.json."""
    if isinstance(grammar, BinaryRuleArrays):
        columns = _columns_of_arrays(grammar)
    else:
        columns = _columns_of_rules(grammar.rules)
    return _compile_columns(columns, grammar, feature_names, source_table, filter_path)


def _columns_of_arrays(grammar: BinaryRuleArrays) -> RuleColumns:
    """RuleColumns of the kernel's arrays, with numpy only (per symbol: one list item)."""
    n_rules = len(grammar)
    # One id space for every object: the kernel's symbols, then the top rules' lhs labels (a
    # label that is also a child is that child's symbol).
    n_kernel = len(grammar.symbol_objects)
    label_symbol = {grammar.symbol_objects[s]: s
                    for s in np.flatnonzero(grammar.symbol_kind == SYMBOL_KINDS["label"]).tolist()}
    lhs_label_id = np.array([label_symbol.get(label, n_kernel + k) for k, label in enumerate(grammar.lhs_labels)],
                            dtype=np.int64)
    objects = grammar.symbol_objects + grammar.lhs_labels
    kinds = np.concatenate([grammar.symbol_kind, np.full(len(grammar.lhs_labels), SYMBOL_KINDS["label"], np.uint8)])
    lhs = grammar.rule_lhs.astype(np.int64)
    tops = lhs < 0
    lhs[tops] = lhs_label_id[-1 - lhs[tops]]
    child0 = grammar.rule_child0.astype(np.int64)
    child1 = grammar.rule_child1.astype(np.int64)

    # Renumber objects by first appearance in lhs, then child0, then child1 (as interning does).
    sequence = np.concatenate([lhs, child0, child1[child1 >= 0]])
    first = _first_appearance(sequence, len(objects))
    seen = np.flatnonzero(first < len(sequence))
    seen = seen[np.argsort(first[seen], kind="stable")]
    rank = np.full(len(objects) + 1, -1, dtype=np.int64)  # the last place: child1 -1 stays -1
    rank[seen] = np.arange(len(seen))
    seen_kinds = kinds[seen]

    # Target words renumbered by first appearance in the rows, in rule order (the kernel numbers
    # them in about this order already; renumbering makes it certain).
    target = grammar.rule_target
    is_word = target >= 0
    word_first = _first_appearance(target[is_word].astype(np.int64), len(grammar.target_words))
    words_seen = np.flatnonzero(word_first < np.count_nonzero(is_word))
    words_seen = words_seen[np.argsort(word_first[words_seen], kind="stable")]
    word_rank = np.zeros(len(grammar.target_words), dtype=np.int32)
    word_rank[words_seen] = np.arange(len(words_seen), dtype=np.int32)
    target_items = target.copy()
    target_items[is_word] = word_rank[target[is_word]]
    target_words = grammar.target_words
    return RuleColumns(
        symbols=[objects[i] for i in seen.tolist()],
        n_lhs_names=int(np.count_nonzero(first[seen] < n_rules)),
        is_run=seen_kinds == SYMBOL_KINDS["run"],
        is_virtual=seen_kinds == SYMBOL_KINDS["virtual"],
        lhs=rank[lhs], child0=rank[child0], child1=rank[child1],
        origin=grammar.rule_origin.astype(np.int64),
        carries=grammar.rule_carries.astype(np.uint8),
        target_lengths=np.diff(grammar.rule_target_offsets).astype(np.int64),
        target_items=target_items.astype(np.int32),
        target_words=[target_words[i] for i in words_seen.tolist()],
    )


def _first_appearance(sequence: np.ndarray, n_values: int) -> np.ndarray:
    """Per value 0..n_values-1, the first index in `sequence` that holds it (len(sequence) if none)."""
    first = np.full(n_values, len(sequence), dtype=np.int64)
    np.minimum.at(first, sequence, np.arange(len(sequence), dtype=np.int64))
    return first


def _columns_of_rules(rules) -> RuleColumns:
    """RuleColumns of BinaryRule objects (the reference path): dict look-ups per rule."""
    n_rules = len(rules)
    # columns of the rules (zip(*rules) would be 10x slower: it makes one iterator per rule)
    lhs_names = [r[0] for r in rules]
    children0 = [r[1][0] for r in rules]
    children1 = [r[1][1] if len(r[1]) > 1 else None for r in rules]
    targets = [r[2] for r in rules]
    origins = [r[3] for r in rules]

    # Intern every lhs and child (str: nonterminal, tuple: terminal run) in one dict, in order of
    # first appearance, lhs first; then renumber with numpy: real labels (sorted), virtual symbols
    # (in order of definition), runs.
    first_seen: dict = {}
    intern = first_seen.setdefault
    lhs_seen = np.fromiter((intern(x, len(first_seen)) for x in lhs_names), dtype=np.int64, count=n_rules)
    n_lhs_names = len(first_seen)
    child0_seen = np.fromiter((intern(x, len(first_seen)) for x in children0), dtype=np.int64, count=n_rules)
    child1_seen = np.fromiter((-1 if x is None else intern(x, len(first_seen)) for x in children1),
                              dtype=np.int64, count=n_rules)
    symbols = list(first_seen)
    del first_seen, lhs_names, children0, children1
    is_run = np.fromiter((x.__class__ is tuple for x in symbols), dtype=bool, count=len(symbols))
    is_virtual = np.fromiter((x.__class__ is str and x.startswith("<") for x in symbols), dtype=bool,
                             count=len(symbols))
    origin = np.array(origins, dtype=np.int64).reshape(n_rules)

    # Target sides: word ids >= 0, block reference k as -1-k; None (carry the blocks) as empty.
    carries = np.fromiter((t is None for t in targets), dtype=np.uint8, count=n_rules)
    target_lengths = np.fromiter((len(t) if t else 0 for t in targets), dtype=np.int64, count=n_rules)
    flat_targets = list(chain.from_iterable(t for t in targets if t))
    distinct_items = dict.fromkeys(flat_targets)
    target_words = [x for x in distinct_items if x.__class__ is str]
    item_id: dict = {w: i for i, w in enumerate(target_words)}
    item_id.update((k, -1 - k) for k in distinct_items if k.__class__ is int)
    target_items = np.fromiter(map(item_id.__getitem__, flat_targets), dtype=np.int32, count=len(flat_targets))
    return RuleColumns(symbols, n_lhs_names, is_run, is_virtual, lhs_seen, child0_seen, child1_seen, origin,
                       carries, target_lengths, target_items, target_words)


def _compile_columns(columns: RuleColumns, grammar: BinaryGrammar | BinaryRuleArrays,
                     feature_names: list[str] | None, source_table: str | None,
                     filter_path: str | None) -> CompiledGrammar:
    """The store of rule columns (compile_grammar's common part): renumber, sort, index."""
    symbols, n_lhs_names, is_run, is_virtual = columns.symbols, columns.n_lhs_names, columns.is_run, columns.is_virtual
    lhs_seen, child0_seen, child1_seen = columns.lhs, columns.child0, columns.child1
    n_rules = len(lhs_seen)
    undefined = np.flatnonzero(is_virtual[n_lhs_names:])
    if len(undefined):
        raise ValueError(f"virtual symbols used but never defined: {[symbols[n_lhs_names + i] for i in undefined[:5]]}")
    real_seen = np.array(sorted(np.flatnonzero(~is_run & ~is_virtual), key=symbols.__getitem__), dtype=np.int64)
    new_order = np.concatenate([real_seen, np.flatnonzero(is_virtual), np.flatnonzero(is_run)])
    new_id = np.empty(len(symbols) + 1, dtype=np.int32)
    new_id[new_order] = np.arange(len(new_order), dtype=np.int32)
    new_id[-1] = -1  # child1 of a one-child rule
    lhs, child0, child1 = new_id[lhs_seen], new_id[child0_seen], new_id[child1_seen]
    nonterminals = list(map(symbols.__getitem__, new_order[:len(new_order) - int(is_run.sum())].tolist()))
    runs = list(map(symbols.__getitem__, new_order[len(nonterminals):].tolist()))
    n_real = len(real_seen)
    n_nonterminals = len(nonterminals)
    n_runs = len(runs)
    origin = columns.origin
    del symbols, lhs_seen, child0_seen, child1_seen

    source_word_id: dict[str, int] = {}
    run_words = np.fromiter((source_word_id.setdefault(w, len(source_word_id)) for run in runs for w in run),
                            dtype=np.int32)
    run_offsets = np.zeros(n_runs + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, runs), dtype=np.int64, count=n_runs), out=run_offsets[1:])

    carries, target_lengths, target_items = columns.carries, columns.target_lengths, columns.target_items
    target_words = columns.target_words

    # Sort the rules by index key: one-child rules by child0, then pairs by (child0, child1).
    # (pairs after singles, child0, child1) in one int64 key: ids are below 2**31
    index_key = ((child1 >= 0).astype(np.int64) << 62) | (child0.astype(np.int64) << 31) | (child1.astype(np.int64) + 1)
    order = np.lexsort((origin, lhs, index_key))
    del index_key
    lhs, child0, child1, origin, carries = lhs[order], child0[order], child1[order], origin[order], carries[order]
    target_offsets, target_items = _permute_ragged(target_lengths, target_items, order)

    n_symbols = n_nonterminals + n_runs
    n_single = int(np.count_nonzero(child1 < 0))
    single_keys, single_offsets = _group(child0[:n_single].astype(np.int64))
    pair_keys, pair_offsets = _group(child0[n_single:].astype(np.int64) * n_symbols + child1[n_single:])

    # Per source rule: its top rule, its features (log scores), its tree fragment.
    source_rules = grammar.source_rules
    n_source = len(source_rules)
    source_top_rule = np.full(n_source, -1, dtype=np.int32)
    tops = np.flatnonzero(origin >= 0)
    source_top_rule[origin[tops]] = tops
    features, feature_names = _features(source_rules, feature_names, source_table)
    if isinstance(source_rules, RuleTableArrays):  # the trees in UTF-8 already
        trees, tree_offsets = source_rules.trees, source_rules.tree_offsets.copy()
    else:
        encoded_trees = [(r.tree or "").encode("utf-8") for r in source_rules]
        tree_offsets = np.zeros(n_source + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded_trees), dtype=np.int64, count=n_source), out=tree_offsets[1:])
        trees = b"".join(encoded_trees)

    symbol_is_virtual = np.zeros(n_nonterminals, dtype=np.uint8)
    symbol_is_virtual[n_real:] = 1
    symbol_rule = np.full(n_nonterminals, -1, dtype=np.int32)
    defining = np.flatnonzero(lhs >= n_real)
    symbol_rule[lhs[defining]] = defining
    symbol_carried = _carried_blocks(symbol_rule, child0, child1, carries, n_runs)

    run_hashes = hash_runs(run_offsets, run_words)
    run_hash_runs = np.argsort(run_hashes, kind="stable").astype(np.int32)

    arrays = {
        "symbol_carried": symbol_carried,
        "symbol_is_virtual": symbol_is_virtual,
        "symbol_rule": symbol_rule,
        "run_offsets": run_offsets,
        "run_words": run_words,
        "run_hash_keys": run_hashes[run_hash_runs],
        "run_hash_runs": run_hash_runs,
        "rule_lhs": lhs,
        "rule_child0": child0,
        "rule_child1": child1,
        "rule_target_offsets": target_offsets,
        "rule_target": target_items,
        "rule_carries": carries,
        "rule_origin": origin,
        "source_top_rule": source_top_rule,
        "features": features,
        "tree_offsets": tree_offsets,
        "pair_keys": pair_keys,
        "pair_offsets": pair_offsets,
        "pair_rules": np.arange(n_single, n_rules, dtype=np.int32),
        "single_keys": single_keys,
        "single_offsets": single_offsets,
        "single_rules": np.arange(n_single, dtype=np.int32),
    }
    meta = {
        "format_version": FORMAT_VERSION,
        "strategy": grammar.strategy,
        "report": _jsonable(grammar.report),
        "feature_names": feature_names,
        "n_real_nonterminals": n_real,
        "n_nonterminals": n_nonterminals,
        "n_runs": n_runs,
        "n_symbols": n_symbols,
        "n_rules": n_rules,
        "n_source_rules": n_source,
        "n_pair_keys": len(pair_keys),
        "n_single_keys": len(single_keys),
        "n_source_words": len(source_word_id),
        "n_target_words": len(target_words),
        # sizes of the text files as save_store writes them (one line per name), checked at open
        "text_file_bytes": {name: _text_file_bytes(lines) for name, lines in
                            ((NONTERMINALS_FILE, nonterminals), (SOURCE_VOCAB_FILE, source_word_id),
                             (TARGET_VOCAB_FILE, target_words))},
        "max_run_length": int(np.diff(run_offsets).max()) if n_runs else 0,
        "oov_id": -1,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "source_table": os.fspath(source_table) if source_table is not None else None,
        "filter": os.fspath(filter_path) if filter_path is not None else None,
    }
    for name, (dtype, _) in ARRAYS.items():
        assert arrays[name].dtype == dtype, (name, arrays[name].dtype, dtype)
    return CompiledGrammar(arrays, nonterminals, list(source_word_id), target_words, trees, meta,
                           order.astype(np.int64))


def save_store(compiled: CompiledGrammar, path: str | os.PathLike) -> None:
    """Write the store directory without touching the files of the store it replaces.

    A decoder may have the old store's files memory-mapped: rewriting them in place would kill it
    (SIGBUS) or feed it a mix of two grammars. So the new store is written into a temporary
    directory beside `path` and swapped into place; the old directory is removed after (a reader
    keeps the inodes it has mapped or opened). A directory at `path` that
    is not a grammar store is never replaced. meta.json goes last, so an interrupted write is
    detected at open. The temporary directory is named after this process (decoder.outputs.temporary_name):
    the next compile to the same path removes one left by a compile that was killed."""
    path = os.path.realpath(os.fspath(path))  # through a symlink: replace the store it points to
    if os.path.exists(path):
        _check_replaceable(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    remove_stale_temporaries(path)  # of a compile that was killed
    new = temporary_name(path)
    os.mkdir(new, 0o700)
    try:
        _write_files(compiled, new)
        os.chmod(new, 0o777 & ~_umask())  # mkdtemp makes it 0700; a store is as readable as any output
        if os.path.exists(path):
            _swap_directories(new, path)  # `new` now holds the old store, removed below
        else:
            os.rename(new, path)
    finally:
        shutil.rmtree(new, ignore_errors=True)


def _swap_directories(new: str, path: str) -> None:
    """Put directory `new` at `path` and the old `path` at `new`: atomically where Linux can
    (renameat2 with RENAME_EXCHANGE: no instant without a store at `path`), else by renames, the
    first undone if the second fails."""
    if _rename_exchange(new, path):
        return
    old = new + ".old"
    os.rename(path, old)
    try:
        os.rename(new, path)
    except BaseException:
        os.rename(old, path)
        raise
    os.rename(old, new)


def _rename_exchange(a: str, b: str) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # old kernel or a file system without it
        return False
    raise OSError(error, os.strerror(error), b)


def _check_replaceable(path: str) -> None:
    """StoreError unless `path` is an empty directory or one that holds only store files."""
    if not os.path.isdir(path):
        raise StoreError(path, "exists and is not a directory")
    store_files = {name + ".npy" for name in ARRAYS} | {META_FILE, META_FILE + ".tmp", NONTERMINALS_FILE,
                                                         SOURCE_VOCAB_FILE, TARGET_VOCAB_FILE, TREES_FILE}
    others = sorted(set(os.listdir(path)) - store_files)
    if others:
        raise StoreError(path, f"exists and is not a grammar store (it holds {', '.join(others[:3])}"
                               f"{', ...' if len(others) > 3 else ''}): refusing to replace it")


def _write_files(compiled: CompiledGrammar, path: str) -> None:
    """Write the store's files into the directory `path`; a write error (a full disk) is an OutputError
    naming the file as it would be in the store (final_name: `path` is the store's temporary)."""
    store = final_name(path)

    @contextlib.contextmanager
    def writing(file_name: str):
        try:
            yield os.path.join(path, file_name)
        except OSError as error:
            raise OutputError(os.path.join(store, file_name),
                              f"cannot write it: {_write_error_reason(error, path)}") from None

    for name, array in compiled.arrays.items():
        with writing(name + ".npy") as file:
            np.save(file, np.ascontiguousarray(array))
    for file_name, lines in ((NONTERMINALS_FILE, compiled.nonterminals),
                             (SOURCE_VOCAB_FILE, compiled.source_vocab),
                             (TARGET_VOCAB_FILE, compiled.target_vocab)):
        with writing(file_name) as file, open(file, "w", encoding="utf-8", newline="\n") as out:
            if lines:
                out.write("\n".join(lines) + "\n")
    with writing(TREES_FILE) as file, open(file, "wb") as out:
        out.write(compiled.trees)
    with writing(META_FILE) as file, open(file, "w", encoding="utf-8") as out:
        json.dump(compiled.meta, out, indent=1, ensure_ascii=False)


def _write_error_reason(error: OSError, directory: str) -> str:
    """Why a write failed, in words: the system's reason, or for a short write without one (numpy's
    "N requested and M written" from fwrite), a full disk when the file system has no room left."""
    if error.errno:
        return error.strerror or os.strerror(error.errno)
    try:
        status = os.statvfs(directory)
        full = status.f_bavail * status.f_frsize < 1 << 20
    except OSError:
        full = False
    reason = os.strerror(errno.ENOSPC) if full else "a short write"
    return f"{reason} ({error})"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_store(grammar: BinaryGrammar, path: str | os.PathLike, **kwargs) -> CompiledGrammar:
    """Compile `grammar` and save it to the directory `path`; keyword arguments go to compile_grammar."""
    compiled = compile_grammar(grammar, **kwargs)
    save_store(compiled, path)
    return compiled


def _group(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique keys of a sorted array and offsets: key i occupies [offsets[i], offsets[i+1])."""
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if len(sorted_keys) else \
        np.zeros(0, dtype=np.int64)
    keys = sorted_keys[starts].astype(np.int64)
    offsets = np.append(starts, len(sorted_keys)).astype(np.int64)
    return keys, offsets


def _permute_ragged(lengths: np.ndarray, items: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and items of a ragged array (row i = `lengths[i]` items) with its rows reordered."""
    old_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=old_offsets[1:])
    new_lengths = lengths[order]
    new_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(new_lengths, out=new_offsets[1:])
    gather = np.repeat(old_offsets[:-1][order] - new_offsets[:-1], new_lengths) + np.arange(new_offsets[-1])
    return new_offsets, items[gather]


def _carried_blocks(symbol_rule: np.ndarray, child0: np.ndarray, child1: np.ndarray, carries: np.ndarray,
                    n_runs: int) -> np.ndarray:
    """Blocks an item of each nonterminal carries: 1, except a monolingual virtual symbol, which
    carries its children's (a fixed point over nesting depth, computed for all symbols at once)."""
    n = len(symbol_rule)
    # per symbol id, then 0 for every run, then a trailing 0 that child id -1 picks up
    carried = np.concatenate([np.ones(n, dtype=np.int32), np.zeros(n_runs + 1, dtype=np.int32)])
    mono = np.flatnonzero((symbol_rule >= 0) & (carries[np.maximum(symbol_rule, 0)] == 1))
    left, right = child0[symbol_rule[mono]], child1[symbol_rule[mono]]
    for _ in range(n + 1):
        updated = carried[left] + carried[right]
        if np.array_equal(updated, carried[mono]):
            break
        carried[mono] = updated
    return carried[:n].copy()


def _text_file_bytes(lines) -> int:
    """The size of a text file of these lines, one a line (UTF-8 encodes a joined text as the sum of its parts)."""
    lines = list(lines)
    return len("\n".join(lines).encode("utf-8")) + 1 if lines else 0


def _features(source_rules, feature_names, source_table=None):
    """float32[n, F] natural logs of the Moses scores (0 -> -100, as Rule.log_scores), and F names."""
    if isinstance(source_rules, RuleTableArrays):
        n_features = source_rules.n_scores if len(source_rules) else len(feature_names or ())
        scores = source_rules.scores.reshape(len(source_rules), n_features)
    else:
        lengths = {len(r.scores) for r in source_rules}
        if len(lengths) > 1:
            raise ValueError(f"rules have different numbers of scores: {sorted(lengths)}")
        n_features = lengths.pop() if lengths else len(feature_names or ())
        scores = np.fromiter(chain.from_iterable(r.scores for r in source_rules), dtype=np.float64,
                             count=len(source_rules) * n_features).reshape(len(source_rules), n_features)
    logs = np.full(scores.shape, MOSES_LOG_OF_ZERO)
    np.log(scores, out=logs, where=scores > 0)
    floored = int(np.count_nonzero(scores <= 0))
    if floored:  # a probability of 0 is Moses' convention; a negative one is not a probability at all
        negative = int(np.count_nonzero(scores < 0))
        log.warning("%s: %d of its %d scores are zero%s: their log is taken as %g, as Moses does",
                    source_table or "the rule table", floored, scores.size,
                    f" or negative ({negative} negative)" if negative else "", MOSES_LOG_OF_ZERO)
    if feature_names is None:
        feature_names = [f"f{i}" for i in range(n_features)]
    if len(feature_names) != n_features:
        raise ValueError(f"{len(feature_names)} feature names for {n_features} scores per rule")
    return logs.astype(np.float32), list(feature_names)


def _jsonable(value):
    """The binarization report with numpy scalars and tuples made JSON-friendly."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
