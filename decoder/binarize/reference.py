"""The pure-Python reference of `binarize`: the per-rule loop of the compiled `RuleBinarizer`
(decoder._ext._rule_binarizer), written plainly. Slow; tests check that both give identical grammars.
"""
from __future__ import annotations

import random
import time
from typing import Iterable

import numpy as np

from ..grammar import Rule
from .binary_grammar import BinaryGrammar, BinaryGrammarBuilder
from .icr import SpanTables, bucket_size_histogram, cost_of, grammar_cost, icr_sweep
from .rule_shape import node_templates, shape_key, tokenize_rule, tree_from_spans, tree_spans
from .strategies import (check_arguments, feasible_spans, left_tree, monolingual_tree, random_tree,
                         right_tree)



def binarize_reference(rules: Iterable[Rule], strategy: str = "left", seed: int = 0, max_iterations: int = 20,
             non_binarizable: str = "monolingual", progress: bool = False) -> BinaryGrammar:
    check_arguments(strategy, non_binarizable)
    started = time.perf_counter()
    rules = list(rules)
    rng = random.Random(seed)
    token_seqs = [tokenize_rule(r) for r in rules]

    # 1. A bracketing per rule (None: not binarizable).
    trees: list = []
    not_binarizable: list[int] = []
    for i, tokens in enumerate(token_seqs):
        if strategy == "monolingual":
            tree = monolingual_tree(tokens.size)
        elif strategy in ("left", "icr"):
            tree = left_tree(tokens.ranks)
        elif strategy == "right":
            tree = right_tree(tokens.ranks)
        else:
            tree = random_tree(tokens.ranks, rng)
        if tree is None:
            not_binarizable.append(i)
        trees.append(tree)
    if strategy != "monolingual":
        # Exactness: a rule is non-binarizable iff its permutation is (the left tree is None).
        for i in not_binarizable:
            trees[i] = monolingual_tree(token_seqs[i].size) if non_binarizable == "monolingual" else None

    # 2. ICR re-brackets the synchronous rules to lower Q(G').
    iterations: list[int] = []
    if strategy == "icr":
        trees, iterations = _iterative_cost_reduction_reference(rules, token_seqs, trees, set(not_binarizable),
                                                      max_iterations, progress)

    # 3. Binary rules from the bracketings.
    builder = BinaryGrammarBuilder(strategy, rules)
    monolingual_rules = set(not_binarizable)
    iterator = range(len(rules))
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, desc=f"binarize ({strategy})", unit="rule", mininterval=1.0)
    for i in iterator:
        tree = trees[i]
        if tree is None:
            builder.skip()
            continue
        tokens = token_seqs[i]
        synchronous = strategy != "monolingual" and i not in monolingual_rules
        ranks, target_pattern = shape_key(rules[i], tokens)
        builder.add(i, tokens, node_templates(ranks, target_pattern, tree, synchronous))
    grammar = builder.grammar
    grammar.non_binarizable = not_binarizable

    cost, sizes = grammar_cost(grammar.bucket_keys)
    grammar.report = {
        "strategy": strategy,
        "seed": seed if strategy == "random" else None,
        "source_rules": len(rules),
        "binary_rules": len(grammar.rules),
        "binary_rule_instances": sum(len(b) for b in grammar.binarizations),
        "virtual_nonterminals": len(grammar.virtual_symbols()),
        "non_binarizable": len(not_binarizable),
        "non_binarizable_policy": non_binarizable,
        "dropped": len(not_binarizable) if non_binarizable == "drop" and strategy != "monolingual" else 0,
        "cost": cost,
        "buckets": len(sizes),
        "bucket_sizes": bucket_size_histogram(sizes),
        "iterations": iterations,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return grammar


def _iterative_cost_reduction_reference(rules, token_seqs, trees, frozen: set[int], max_iterations: int,
                              progress: bool):
    """Xiao et al. 2009, Section 3.4, over flat span tables; returns (trees, Q after each sweep)."""
    n_rules = len(rules)
    n_tokens = np.zeros(n_rules, dtype=np.int32)
    table_offsets = np.zeros(n_rules + 1, dtype=np.int64)
    tree_offsets = np.zeros(n_rules + 1, dtype=np.int64)
    active = np.zeros(n_rules, dtype=np.uint8)
    bucket_ids: dict[tuple, int] = {}
    span_bucket_parts: list[np.ndarray] = []
    tree_span_parts: list[list[int]] = []
    for i, (rule, tokens) in enumerate(zip(rules, token_seqs)):
        n = tokens.size
        n_tokens[i] = n
        table = np.full(n * n, -1, dtype=np.int32)
        tree = trees[i]
        if n >= 2 and tree is not None:
            keys = [f"[{rule.labels[s]}]" if s >= 0 else " ".join(run)
                    for s, run in zip(tokens.slots, tokens.runs)]
            spans = tree_spans(tree) if i in frozen else feasible_spans(tokens.ranks)
            for p, q in spans:
                table[p * n + q] = bucket_ids.setdefault(tuple(keys[p:q + 1]), len(bucket_ids))
            active[i] = i not in frozen
            tree_span_parts.append([p * n + q for p, q in tree_spans(tree)])
        else:
            tree_span_parts.append([])
        span_bucket_parts.append(table)
        table_offsets[i + 1] = table_offsets[i] + n * n
        tree_offsets[i + 1] = tree_offsets[i] + len(tree_span_parts[-1])
    span_bucket = np.concatenate(span_bucket_parts) if span_bucket_parts else np.zeros(0, np.int32)
    tree_span_codes = np.array([c for part in tree_span_parts for c in part], dtype=np.int32)
    counts = np.zeros(len(bucket_ids), dtype=np.int64)
    np.add.at(counts, span_bucket[table_offsets[:-1].repeat(np.diff(tree_offsets)) + tree_span_codes], 1)
    tables = SpanTables(n_tokens, table_offsets, span_bucket, tree_offsets, tree_span_codes, active, counts)

    # One-token rules sit in buckets no multi-token node can share: a constant part of Q.
    single_sizes: dict = {}
    for rule, tokens in zip(rules, token_seqs):
        if tokens.size == 1:
            key = f"[{rule.labels[0]}]" if tokens.slots[0] >= 0 else " ".join(tokens.runs[0])
            single_sizes[key] = single_sizes.get(key, 0) + 1
    single = sum(v * v for v in single_sizes.values())

    history = [cost_of(counts) + single]
    for _ in range(max_iterations):
        icr_sweep(tables)
        history.append(cost_of(counts) + single)
        if progress:
            print(f"icr: iteration {len(history) - 1}: Q = {history[-1]:,}", flush=True)
        if history[-1] >= history[-2]:
            break
    new_trees = list(trees)
    for i in range(n_rules):
        if active[i]:
            n = int(n_tokens[i])
            codes = tables.tree_spans[tree_offsets[i]:tree_offsets[i + 1]]
            new_trees[i] = tree_from_spans({(int(c) // n, int(c) % n) for c in codes}, 0, n - 1)
    return new_trees, history
