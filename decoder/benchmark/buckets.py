"""Where Q(G') lives: the buckets of a binarized grammar (Xiao, Li, Zhang, Zhu and Zhou 2009).

Xiao et al. put each binary rule v of G' in the bucket of the source sub-sequence L(v) it covers and
define Q(G') = sum over v of |S(v, G')| (Eq. 2), which is the sum of squared bucket sizes (Eq. 4). For
one binarized grammar this module says how that sum is made up:

- the bucket-size distribution, in powers of two (buckets, binary rules and the share of Q(G') per
  size class);
- the share of Q(G') in buckets whose source sequence has one, two, or three or more tokens (a token is
  a nonterminal or a run of consecutive source words, as the binarizer sees them; consecutive words are
  never split). No binarization can split a bucket of two tokens: its rules can only leave it when
  another bracketing of their source rule is feasible;
- a lower bound on Q(G') that holds for every binarization of the same rules: the top binary rule of a
  source rule always covers the rule's whole source side, so every binarization puts it in that
  source side's bucket; Q(G') is at least the sum over source sides of (rules with that source side)^2;
- a tighter bound for the synchronous binarizations (left, right, random, icr): a span of a rule that
  some synchronous bracketing of the rule contains and that no other such span crosses is in every
  synchronous bracketing (a bracketing without it has a node that crosses it), so its binary rule is
  in that span's bucket whatever the strategy; Q(G') is at least the sum over buckets of (such forced
  binary rules)^2. The top span is always forced; a rule of two tokens has only it; a rule whose
  permutation is not binarizable keeps its monolingual tree, all of it forced;
- the largest buckets with their source sequence, and how many of their binary rules are top rules and
  forced ones (which no synchronous binarization moves).

A source rule's binary rules are given as the bucket keys of its nodes
(decoder.binarize.BinaryGrammar.bucket_keys: per node, the tuple of its tokens' keys, "[NP]" for a
nonterminal and the words of a run joined by spaces); the top node is the one with the most tokens.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

TOP_BUCKETS = 10
TWO_TOKEN_KINDS = ("nonterminal nonterminal", "nonterminal words", "words nonterminal")


def size_class(size: int) -> str:
    """The power-of-two class of a bucket size: 1, 2-3, 4-7, 8-15, ..."""
    low = 1 << (size.bit_length() - 1)
    return "1" if low == 1 else f"{low}-{2 * low - 1}"


def _token_kind(key: str) -> str:
    return "nonterminal" if key.startswith("[") and key.endswith("]") else "words"


def source_tokens_class(tokens: int) -> str:
    return "1" if tokens == 1 else "2" if tokens == 2 else "3+"


def crossing_spans(n: int) -> tuple[list[tuple[int, int]], list[list[int]]]:
    """The spans (p, q), p < q, of n tokens, and for each the indices of the spans that cross it
    (overlap it without containing it or lying inside it)."""
    spans = [(p, q) for p in range(n) for q in range(p + 1, n)]
    crossing = [[j for j, (a, b) in enumerate(spans) if a < p <= b < q or p < a <= q < b] for p, q in spans]
    return spans, crossing


def forced_spans(tables) -> np.ndarray:
    """Rows (rule, p, q): the token spans p..q that every synchronous bracketing of the rule contains,
    from the span tables of decoder.binarize.span_tables (a span is in the table when some bracketing
    contains it; it is in all of them when no span of the table crosses it)."""
    rows = []
    n_tokens = np.asarray(tables.n_tokens)
    for n in np.unique(n_tokens):
        n = int(n)
        if n < 2:
            continue
        rules = np.nonzero(n_tokens == n)[0]
        spans, crossing = crossing_spans(n)
        codes = np.array([p * n + q for p, q in spans], dtype=np.int64)
        feasible = tables.span_bucket[tables.table_offsets[rules][:, None] + codes[None, :]] >= 0
        for j, (p, q) in enumerate(spans):
            forced = feasible[:, j]
            if crossing[j]:
                forced = forced & ~feasible[:, crossing[j]].any(axis=1)
            hit = rules[forced]
            if len(hit):
                rows.append(np.stack([hit, np.full(len(hit), p), np.full(len(hit), q)], axis=1))
    return np.concatenate(rows).astype(np.int64) if rows else np.zeros((0, 3), dtype=np.int64)


def checked_analysis(grammar, strategy: str, forced: np.ndarray | None = None) -> dict:
    """bucket_analysis of a binarized grammar (decoder.binarize.BinaryGrammar), checked against the
    binarizer's own Q(G'): buckets that do not add up to it are a RuntimeError naming the strategy."""
    analysis = bucket_analysis(grammar.bucket_keys, forced)
    if analysis["cost"] != grammar.report["cost"]:
        raise RuntimeError(f"{strategy}: the buckets sum to Q {analysis['cost']}, "
                           f"the binarizer reports {grammar.report['cost']}")
    return analysis


def bucket_analysis(bucket_keys, forced: np.ndarray | None = None, top: int = TOP_BUCKETS) -> dict:
    """The make-up of Q(G') of one binarized grammar, from its source rules' node bucket keys; with
    `forced` (forced_spans of the same rules, for a synchronous binarization), the forced bound."""
    sizes: Counter = Counter()
    tops: Counter = Counter()
    roots: list = []
    for keys in bucket_keys:
        if not keys:  # a rule the binarizer dropped
            roots.append(None)
            continue
        sizes.update(keys)
        root = max(keys, key=len)
        tops[root] += 1
        roots.append(root)
    cost = sum(n * n for n in sizes.values())
    forced_sizes: Counter | None = None
    if forced is not None:
        forced_sizes = Counter(tops)  # the top span is forced (and in every rule's span table)
        for i, p, q in forced.tolist():
            root = roots[i]
            if root is not None and q >= len(root):
                raise ValueError(f"rule {i}: a forced span ends at token {q}, the rule has {len(root)} tokens")
            if root is not None and q - p + 1 < len(root):
                forced_sizes[root[p:q + 1]] += 1

    def share(part):
        return part / cost if cost else None

    classes: dict[str, dict] = {}
    by_tokens = {k: {"buckets": 0, "binary_rules": 0, "cost": 0} for k in ("1", "2", "3+")}
    two_token_kinds = {k: {"buckets": 0, "binary_rules": 0, "cost": 0} for k in TWO_TOKEN_KINDS}
    for key, n in sizes.items():
        for row in (classes.setdefault(size_class(n), {"low": 1 << (n.bit_length() - 1), "buckets": 0,
                                                       "binary_rules": 0, "cost": 0}),
                    by_tokens[source_tokens_class(len(key))]):
            row["buckets"] += 1
            row["binary_rules"] += n
            row["cost"] += n * n
        if len(key) == 2:
            row = two_token_kinds[f"{_token_kind(key[0])} {_token_kind(key[1])}"]
            row["buckets"] += 1
            row["binary_rules"] += n
            row["cost"] += n * n
    for row in (*classes.values(), *by_tokens.values(), *two_token_kinds.values()):
        row["cost_share"] = share(row["cost"])
    histogram = [dict(size=name, **{k: v for k, v in row.items() if k != "low"})
                 for name, row in sorted(classes.items(), key=lambda item: item[1]["low"])]
    lower_bound = sum(n * n for n in tops.values())
    forced_bound = sum(n * n for n in forced_sizes.values()) if forced_sizes is not None else None
    largest = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))[:top]
    return {
        "cost": cost,
        "buckets": len(sizes),
        "binary_rule_instances": sum(sizes.values()),
        "size_histogram": histogram,
        "by_source_tokens": by_tokens,
        "two_token_kinds": two_token_kinds,
        "two_token_cost_share": share(by_tokens["2"]["cost"]),
        "lower_bound": lower_bound,
        "cost_over_lower_bound": cost / lower_bound if lower_bound else None,
        "forced_lower_bound": forced_bound,
        "cost_over_forced_lower_bound": cost / forced_bound if forced_bound else None,
        "largest": [{"source": " ".join(key), "tokens": len(key), "size": n, "top_rules": tops[key],
                     "forced": forced_sizes[key] if forced_sizes is not None else None,
                     "cost_share": share(n * n)} for key, n in largest],
    }
