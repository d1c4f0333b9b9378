"""Pluggable binarization of synchronous grammars.

    from decoder.binarize import binarize
    grammar = binarize(rules, strategy="icr")
    grammar.rules        # distinct BinaryRule objects
    grammar.report       # counts, Q(G'), bucket-size histogram, ICR cost per iteration

Strategies: monolingual, left, right, random, icr (see strategies.py). Rules
whose permutation is not binarizable are detected exactly (Zhang et al. 2006,
Algorithm 1) and, by default, binarized monolingually and listed in
`grammar.non_binarizable`; `non_binarizable="drop"` leaves them out.
`unbinarize(grammar)` rebuilds the source rules from the binary ones.
`binarize(rules, strategy, arrays=True)` gives the same rules as integer arrays
(`BinaryRuleArrays`, what `cky compile` stores) without making a BinaryRule.

The per-rule loop (tokens, bracketing, node templates, binary rules, bucket
keys) runs compiled in decoder._ext._rule_binarizer.RuleBinarizer; the pure-Python
code it replaces is decoder.binarize.reference.binarize_reference, which
tests/test_binarize_kernel.py holds it to, output for output.
"""
from __future__ import annotations

import gc
import random
import time
from typing import Iterable

import numpy as np

from .._ext import compiled_module
from ..grammar import Rule
from ..rule_arrays import RuleTableArrays
from .binary_grammar import (SYMBOL_KINDS, BinaryGrammar, BinaryGrammarBuilder, BinaryRule, BinaryRuleArrays,
                             expand, expansion_table, is_monolingual_virtual, is_virtual, read_binary_rules,
                             unbinarize, unbinarize_rule, write_binary_grammar)
from .icr import SpanTables, bucket_size_histogram, cost_of, grammar_cost, icr_sweep
from .rule_shape import (node_templates, shape_key, tokenize_rule, tree_from_spans, tree_spans)
from .strategies import (NON_BINARIZABLE_POLICIES, STRATEGIES, SYNCHRONOUS, check_arguments, feasible_spans,
                         left_tree, monolingual_tree, random_tree, right_tree)

_rule_binarizer = compiled_module("_rule_binarizer")

__all__ = ["binarize", "BinaryGrammar", "BinaryRule", "BinaryRuleArrays", "SYMBOL_KINDS", "STRATEGIES", "unbinarize", "unbinarize_rule",
           "expand", "expansion_table", "is_virtual", "is_monolingual_virtual", "grammar_cost",
           "write_binary_grammar", "read_binary_rules", "span_tables"]


# Rules per call into the compiled loop when a progress bar is shown.
_PROGRESS_CHUNK = 50_000


def binarize(rules: Iterable[Rule], strategy: str = "left", seed: int = 0, max_iterations: int = 20,
             non_binarizable: str = "monolingual", progress: bool = False,
             arrays: bool = False) -> BinaryGrammar | BinaryRuleArrays:
    """Binarize with one of STRATEGIES (the per-rule loop runs in decoder._ext._rule_binarizer.RuleBinarizer;
    decoder.binarize.reference.binarize_reference is its pure-Python twin, with identical output).

    With `arrays`, the rules come as a BinaryRuleArrays (no BinaryRule objects: what the store
    compiles fastest); the same report, and the same store from decoder.store.compile_grammar.
    A table with a label spelled like a virtual name ("<...") gets a BinaryGrammar even then:
    only objects can say that such a label and a virtual name are one symbol.

    `rules` may be a decoder.rule_arrays.RuleTableArrays (what `cky compile` reads): with
    `arrays`, the kernel reads its rows without a Rule object per rule, and the grammar's
    `source_rules` is the table; otherwise (or for a label spelled like a virtual name) its
    rows are made Rules first (`table.rules()`)."""
    check_arguments(strategy, non_binarizable)
    started = time.perf_counter()
    table = None
    if isinstance(rules, RuleTableArrays):
        table = rules
        rules = None if arrays and not table.labels_look_virtual() else table.rules()
    else:
        rules = list(rules)
    with garbage_collector_paused():
        grammar = None
        if rules is None:
            grammar = _binarize_with_kernel(table, strategy, seed, max_iterations, non_binarizable, progress, True)
            if grammar is None:  # (labels_look_virtual says so first)
                rules = table.rules()
        if grammar is None:
            grammar = _binarize_with_kernel(rules, strategy, seed, max_iterations, non_binarizable, progress, arrays)
        if grammar is None:
            grammar = _binarize_with_kernel(rules, strategy, seed, max_iterations, non_binarizable, progress, False)
    grammar.report["seconds"] = round(time.perf_counter() - started, 3)
    return grammar


class garbage_collector_paused:
    """Binarizing (and reading a table: decoder.store.build_store) allocates millions of small
    objects, none of which can form a cycle; each time the cyclic collector runs it walks every
    live object (the whole rule table), which cost more than the binarization itself. (A class, not a generator-based context manager: making
    the generator's frame could itself set off a collection before the pause began.)"""

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info):
        if self.was_enabled:
            gc.enable()


def _binarize_with_kernel(rules: list[Rule] | RuleTableArrays, strategy: str, seed: int, max_iterations: int,
                          non_binarizable: str, progress: bool, arrays: bool) -> BinaryGrammar | BinaryRuleArrays | None:
    """The kernel's grammar (arrays: as BinaryRuleArrays, or None when a label looks virtual).
    `rules` a RuleTableArrays: its rows are read as they are (only with `arrays`)."""
    kernel = _rule_binarizer.RuleBinarizer(strategy, non_binarizable == "drop", BinaryRule, arrays)
    source_rules = rules
    if isinstance(rules, RuleTableArrays):
        kernel.use_table(rules)
        rules = None

    # ICR first re-brackets the synchronous rules to lower Q(G'), starting from `left`.
    iterations: list[int] = []
    tables = None
    if strategy == "icr":
        tables, iterations = _iterative_cost_reduction(kernel, rules, max_iterations, progress)

    # Each rule's bracketing (random draws from rng in rule order), then its binary rules.
    rng = random.Random(seed)
    n_rules = len(source_rules)
    chunk = _PROGRESS_CHUNK if progress else max(n_rules, 1)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_rules, desc=f"binarize ({strategy})", unit="rule", mininterval=1.0)
    for start in range(0, n_rules, chunk):
        stop = min(start + chunk, n_rules)
        kernel.binarize_rules(rules, start, stop, rng, tables)
        if bar is not None:
            bar.update(stop - start)
    if bar is not None:
        bar.close()

    if arrays:
        if kernel.label_like_virtual:
            return None
        grammar = BinaryRuleArrays(strategy, source_rules, **kernel.rule_arrays(), non_binarizable=kernel.not_binarizable)
    else:
        grammar = BinaryGrammar(strategy, rules, kernel.rules, kernel.binarizations, kernel.bucket_keys,
                                kernel.not_binarizable)
    sizes = kernel.bucket_sizes()
    size_values, size_counts = np.unique(sizes, return_counts=True)
    grammar.report = {
        "strategy": strategy,
        "seed": seed if strategy == "random" else None,
        "source_rules": n_rules,
        "binary_rules": len(grammar),
        "binary_rule_instances": kernel.instances,
        "virtual_nonterminals": kernel.virtual_nonterminals(),
        "non_binarizable": len(grammar.non_binarizable),
        "non_binarizable_policy": non_binarizable,
        "dropped": len(grammar.non_binarizable) if non_binarizable == "drop" and strategy != "monolingual" else 0,
        "cost": cost_of(sizes),
        "buckets": len(sizes),
        "bucket_sizes": {str(int(size)): int(count) for size, count in zip(size_values, size_counts)},
        "iterations": iterations,
        "seconds": None,  # set by binarize
    }
    return grammar


def span_tables(rules: Iterable[Rule], non_binarizable: str = "monolingual") -> tuple[SpanTables, int]:
    """The span tables iterative cost reduction works on (Xiao et al. 2009, section 3.3), for the
    left-heavy trees: per rule, the bucket of every token span that some synchronous bracketing of it
    contains (a rule whose permutation is not binarizable: the spans of its monolingual tree only), and
    the constant part of Q(G') that one-token rules add."""
    check_arguments("icr", non_binarizable)
    kernel = _rule_binarizer.RuleBinarizer("icr", non_binarizable == "drop", BinaryRule, False)
    *arrays, single = kernel.icr_tables(list(rules))
    return SpanTables(*arrays), single


def _iterative_cost_reduction(kernel, rules, max_iterations: int, progress: bool):
    """Xiao et al. 2009, Section 3.4, over flat span tables; returns (final tables, Q after each sweep)."""
    *arrays, single = kernel.icr_tables(rules)
    tables = SpanTables(*arrays)
    # One-token rules sit in buckets no multi-token node can share: `single` is a constant part of Q.
    history = [cost_of(tables.counts) + single]
    for _ in range(max_iterations):
        icr_sweep(tables)
        history.append(cost_of(tables.counts) + single)
        if progress:
            print(f"icr: iteration {len(history) - 1}: Q = {history[-1]:,}", flush=True)
        if history[-1] >= history[-2]:
            break
    return tables, history
