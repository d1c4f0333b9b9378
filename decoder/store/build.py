"""Build a grammar store from a Moses rule table: read, filter, binarize, compile, save.

    build = build_store("rules.gz", "model/store", "icr", filter_path="test.es")
    build.meta["n_rules"], build.timings["binarize"]

The one way a store is made from a table file: `cky compile`, the benchmarks and the
test fixtures all call `build_store`.
"""
from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass, field
from typing import Sequence

from ..binarize import binarize, garbage_collector_paused
from ..errors import FeatureNamesError, InputError
from ..grammar import feature_names_path, read_feature_names, read_rules
from .compile import compile_grammar, save_store
from ..rule_arrays import read_rule_arrays
from .filter import filter_rule_arrays, filter_rules, read_sentences


@dataclass
class StoreBuild:
    """What building a store did: rule counts, the binarization report, meta.json, seconds per
    step (wall clock, and CPU seconds of this process)."""

    store_dir: str
    n_read: int
    n_kept: int
    report: dict
    meta: dict
    timings: dict[str, float] = field(default_factory=dict)
    cpu_timings: dict[str, float] = field(default_factory=dict)


def build_store(rules_path: str | os.PathLike, store_dir: str | os.PathLike, strategy: str = "left", *,
                seed: int = 0, filter_path: str | os.PathLike | None = None,
                sentences: Sequence[Sequence[str]] | None = None, feature_names: Sequence[str] | None = None,
                non_binarizable: str = "monolingual", progress: bool = False,
                source_table: str | os.PathLike | None = None, reference: bool = False) -> StoreBuild:
    """Compile the rule table at `rules_path` into a store at `store_dir` (replacing a store there).

    Rules are kept only if they can match a sentence of `filter_path` (a tokenized text) or of
    `sentences` (word lists), if given. The score columns are named by `feature_names`, else by
    the table's names file (decoder.grammar.read_feature_names); with neither, FeatureNamesError:
    positional names would silently stop tuned weights from applying. `source_table` (default:
    `rules_path`) is recorded in meta.json. The table is read into integer arrays by the compiled
    reader (decoder.rule_arrays.read_rule_arrays), whose rows the binarization kernel reads, and
    the binary rules go from the kernel to the store as integer arrays (`binarize(...,
    arrays=True)`); `reference` takes the path through Rule and BinaryRule objects instead
    (decoder.grammar.read_rules; the same store, byte for byte; slower). Errors:
    GrammarFormatError, InputError (file, line; a table without rules, or none kept by the filter),
    FeatureNamesError, StoreError, OutputError (a full disk), OSError."""
    # Reading, binarizing and compiling a table make millions of objects that cannot form a cycle:
    # the cyclic collector would walk them all again and again (see garbage_collector_paused).
    with garbage_collector_paused(), _heap_kept():
        return _build_store(os.fspath(rules_path), store_dir, strategy, seed, filter_path, sentences, feature_names,
                            non_binarizable, progress, source_table, reference)


def _build_store(rules_path, store_dir, strategy, seed, filter_path, sentences, feature_names, non_binarizable,
                 progress, source_table, reference) -> StoreBuild:
    timings: dict[str, float] = {}
    cpu_timings: dict[str, float] = {}
    step = _Steps(timings, cpu_timings)
    with step("read"):
        if reference:
            rules = list(read_rules(rules_path, uniform_scores=True))
            n_scores = len(rules[0].scores) if rules else None
        else:
            rules = read_rule_arrays(rules_path)
            n_scores = rules.n_scores if len(rules) else None
    n_read = len(rules)
    if not n_read:  # a store without rules fails every sentence it is given
        raise InputError(rules_path, "has no rules: a grammar store needs at least one")
    feature_names = _feature_names(rules_path, feature_names, n_scores)

    if filter_path is not None or sentences is not None:
        with step("filter"):
            sentences = read_sentences(filter_path) if filter_path is not None else sentences
            rules = filter_rules(rules, sentences) if reference else filter_rule_arrays(rules, sentences)
        if not len(rules):
            raise InputError(rules_path, f"none of its {n_read} rules can match a sentence of "
                                         f"{filter_path if filter_path is not None else 'the given sentences'}: "
                                         f"a grammar store needs at least one")

    with step("binarize"):
        grammar = binarize(rules, strategy=strategy, seed=seed, non_binarizable=non_binarizable, progress=progress,
                           arrays=not reference)
    with step("compile"):
        compiled = compile_grammar(grammar, feature_names=feature_names,
                                   source_table=os.path.abspath(source_table if source_table is not None
                                                                else rules_path),
                                   filter_path=os.path.abspath(filter_path) if filter_path is not None else None)
    with step("write"):
        save_store(compiled, store_dir)
    return StoreBuild(os.fspath(store_dir), n_read, len(rules), grammar.report, compiled.meta, timings, cpu_timings)


class _Steps:
    """`with steps("name"):` records the wall and CPU seconds of a step."""

    def __init__(self, timings: dict, cpu_timings: dict):
        self.timings, self.cpu_timings, self.name = timings, cpu_timings, None

    def __call__(self, name: str) -> "_Steps":
        self.name = name
        return self

    def __enter__(self):
        self.started, self.cpu_started = time.perf_counter(), time.process_time()

    def __exit__(self, *exc_info):
        self.timings[self.name] = time.perf_counter() - self.started
        self.cpu_timings[self.name] = time.process_time() - self.cpu_started


class _heap_kept:
    """While a store is built, glibc's malloc keeps freed memory for the next allocation instead
    of giving it back to the system: the steps allocate and free arrays of hundreds of MB one
    after another, and each one mapped anew costs a page fault per 4 KiB on first touch (on the
    full Bible table, 1.8 of its 3.5 s of system time; measured in docs/store-format.md). After,
    the thresholds are set back to glibc's defaults (128 KiB; fixed from then on, where glibc
    would move the mmap threshold up by itself) and the kept memory is given back (malloc_trim).
    Nothing is done where the C library has no mallopt."""

    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # malloc.h
    KEEP = 2**31 - 1
    DEFAULT = 128 * 1024

    def __enter__(self):
        try:
            self.libc = ctypes.CDLL(None)
            self.libc.mallopt, self.libc.malloc_trim  # noqa: B018 (glibc only)
        except (OSError, AttributeError):
            self.libc = None
            return
        self.libc.mallopt(self.M_MMAP_THRESHOLD, self.KEEP)
        self.libc.mallopt(self.M_TRIM_THRESHOLD, self.KEEP)

    def __exit__(self, *exc_info):
        if self.libc is not None:
            self.libc.mallopt(self.M_MMAP_THRESHOLD, self.DEFAULT)
            self.libc.mallopt(self.M_TRIM_THRESHOLD, self.DEFAULT)
            self.libc.malloc_trim(ctypes.c_size_t(0))


def _feature_names(rules_path: str, given: Sequence[str] | None, n_scores: int | None) -> list[str]:
    """The names of the table's score columns (given, or from its names file), checked against
    the number of scores per rule (None: an empty table)."""
    if given is not None:
        names, source = list(given), "the given feature names"
    else:
        names, source = read_feature_names(rules_path), feature_names_path(rules_path)
        if names is None:
            if not n_scores:
                return []
            raise FeatureNamesError(rules_path, f"its {n_scores} score columns have no names: no "
                                                f"{os.path.basename(feature_names_path(rules_path))} beside "
                                                f"it (cky extract writes one); give them with --features NAME,...")
    if len(set(names)) != len(names) or not all(names):
        raise FeatureNamesError(rules_path, f"{source}: names must be distinct and non-empty, got {names}")
    if n_scores is not None and len(names) != n_scores:
        raise FeatureNamesError(rules_path, f"{len(names)} feature names in {source} for {n_scores} scores per rule")
    return names
