"""Where Moses' better derivation falls out of our cube pruning (issue 16's goal at pop limit 100).

    python -m bench.moses_diagnose [--details bench/results/moses_details_default100.txt.gz] [--verses 1,2,3]
        [--pop-limit 100] [--setting pop_count=real --setting virtual_pop_limit=400] [--json OUT]
        [--results bench/results/moses_default100_verses200.json]

The held-out runs (bench/results/moses.md, "Held-out failures at pop limit 1000"): --details
bench/results/moses_details_heldout_a.txt.gz (or _b) with the verses listed there and --results
bench/results/moses_default100_verses200.json.

DETAILS is Moses' `-T` file (translation details: every rule application of each verse's 1-best,
in pre-order: `Trans Opt ID [a..b]: context : LHS ->LHS -> target : ... c=RULE core=(...) FUTURE core=(...)`)
from Moses' default configuration on the demo model (bench.bench_moses writes the ini; run it on
the verses where ours loses, listed in the same order as --verses; the default is the stored run of
the 18 verses where ours lost at pop limit 100 with the defaults of 2026-11-25). Ours decodes the same verses
(max_unary_depth 0, table limit 20, the given search settings) and every node of Moses' derivation
is looked up in our chart, bottom up, by its exact derivation: a node is FOUND when our chart
holds an item of its label over its span with an edge of the same source rule whose real tails
(through the binarization's virtual items, matched by their spans) are the items found for its
children. A node whose children are all found but which is not is a FAILURE POINT, and its cause:

- `table_limit`: Moses' rule is in the table but our table limit did not keep it;
- `not_in_store`: not a rule of our store (dropped at binarization, or no such line);
- `virtual`: the rule is kept, but an item of its binarization (a virtual item over a part of its
  span, built from the found children) is not in our chart: its cell's pops went elsewhere;
- `real`: every virtual item is there, the complete rule application is not (not popped);
- `glue`: a glue (GOAL) step is missing; `in_budget` compares it with the worst pop of the GOAL search over
  [0, j) (a cube of its own, with the same pop limit).

For `virtual` and `real`, `in_budget` says whether the missing hypothesis (for real nodes: Moses'
node score plus what our children items score above Moses' children) scores above the worst pop
of its cell (a best-first search over the cell's hypotheses would have popped it; cube pruning
did not reach it), and the cell's pops are split into virtual and real. Prints one line per
failure point and the counts; --json appends them (with the settings) to a JSON list.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import re
import time
from collections import Counter

import numpy as np

from bench.bench_moses import BUILD, RESULTS

# (the target is greedy: it may hold the word ":"; the alignment field after it is pairs only)
_LINE = re.compile(r"^Trans Opt (\d+) \[(\d+)\.\.(\d+)\]: (.*?) : (\S+) ->\S+\s+-> (.*) :((?:\d+-\d+ ?)*): term=(.*?): "
                   r"nonterm=(.*?): c=(\S+) core=\(.*?\)\s+(?:properties: .*?)?\s*(-?[0-9.e+-]+|-?inf)core=")
# The verses of the stored Moses run (moses_details_default100.txt.gz: Moses' default configuration, pop
# limit 100, `-T`): those where ours (pop limit 100, the defaults of 2026-11-25) scored below it.
STORED_VERSES = (1, 2, 3, 6, 8, 10, 11, 12, 14, 19, 20, 21, 27, 30, 32, 36, 38, 39)
_CONTEXT = re.compile(r"\[(\d+)\.\.(\d+)\]=(\S+)")


class Node:
    def __init__(self, verse, start, end, context, lhs, target, nonterm, rule_score, future):
        self.verse, self.start, self.end = verse, start, end    # Moses positions, inclusive, <s> = 0
        self.context = context          # [(a, b, symbol)] in source order
        self.lhs, self.target, self.nonterm = lhs, target, nonterm
        self.rule_score, self.future = rule_score, future
        self.children: list[Node] = []

    @property
    def n_nonterminals(self) -> int:
        return len(self.nonterm)

    def span(self) -> tuple[int, int]:
        """Ours: [i, j), positions without <s>."""
        return self.start - 1, self.end


def parse_details(path: str) -> dict[int, Node]:
    """Moses' -T file: per translation id, the root of its 1-best derivation."""
    lines: dict[int, list] = {}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.startswith("Trans Opt"):
                continue
            m = _LINE.match(line)
            if not m:
                raise ValueError(f"not a Trans Opt line: {line[:200]!r}")
            tid, a, b, context, lhs, target, _, _, nonterm, c, future = m.groups()
            ctx = [(int(x), int(y), s) for x, y, s in _CONTEXT.findall(context)][::-1]
            pairs = [tuple(int(v) for v in p.split("-")) for p in nonterm.split()]
            lines.setdefault(int(tid), []).append(Node(int(tid), int(a), int(b), ctx, lhs, target.split(), pairs,
                                                       float(c), float(future)))
    roots = {}
    for tid, nodes in lines.items():
        position = 0

        def build():
            nonlocal position
            node = nodes[position]
            position += 1
            for _ in range(node.n_nonterminals):
                node.children.append(build())
            return node
        roots[tid] = build()
        if position != len(nodes):
            raise ValueError(f"translation {tid}: {len(nodes) - position} Trans Opt lines left over")
    return roots


def rule_key(node: Node) -> tuple[str, str] | None:
    """The rule table's (source, target) fields of a node's rule (None for glue and unknown words)."""
    source_nt = {}
    tokens = []
    k = 0
    for a, b, symbol in node.context:
        is_nt = any(s == k for s, _ in node.nonterm)
        if is_nt:
            source_nt[k] = symbol
            tokens.append(f"[X][{symbol}]")
        else:
            tokens.append(symbol)
        k += 1
    target_nt = {t: source_nt[s] for s, t in node.nonterm}
    target = [f"[X][{target_nt[t]}]" if t in target_nt else w for t, w in enumerate(node.target)]
    return " ".join(tokens) + " [X]", " ".join(target) + f" [{node.lhs}]"


def walk(node: Node):
    yield node
    for child in node.children:
        yield from walk(child)


def index_table(path: str, keys: set) -> dict:
    """(source, target) -> [line numbers] of the table lines with those fields (= source rule ids)."""
    out: dict = {}
    sources = {s for s, _ in keys}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f):
            source, _, rest = line.partition(" ||| ")
            if source in sources:
                target = rest.partition(" ||| ")[0]
                if (source, target) in keys:
                    out.setdefault((source, target), []).append(number)
    return out


class ChartIndex:
    """Our exported chart, looked up by (symbol, cell) and edge."""

    def __init__(self, chart: dict, n: int, store, goal_symbol: int):
        self.chart, self.n, self.store, self.goal = chart, n, store, goal_symbol
        self.by_key: dict = {}
        for item, (symbol, cell) in enumerate(zip(chart["item_symbol"].tolist(), chart["item_cell"].tolist())):
            self.by_key.setdefault((symbol, cell), []).append(item)
        self.n1 = n + 1
        self.virtual = np.asarray(store.symbol_is_virtual, dtype=bool)

    def cell(self, i, j):
        return i * self.n1 + j

    def span_of(self, item):
        c = int(self.chart["item_cell"][item])
        return divmod(c, self.n1)

    def edges(self, item):
        e = int(self.chart["item_first_edge"][item])
        while e >= 0:
            yield e
            e = int(self.chart["edge_next"][e])

    def is_virtual(self, item):
        s = int(self.chart["item_symbol"][item])
        return s != self.goal and s < len(self.virtual) and self.virtual[s]

    def derives(self, item, targets: list) -> bool:
        """Item (virtual) has an edge whose real tails are exactly `targets` (items, in order)."""
        return any(self._tails_match(e, targets) for e in self.edges(item))

    def _tails_match(self, e, targets) -> bool:
        tails = [int(t) for t in (self.chart["edge_tail0"][e], self.chart["edge_tail1"][e]) if t >= 0]
        rest = list(targets)
        for t in tails:
            if self.is_virtual(t):
                i, j = self.span_of(t)
                inside = [x for x in rest if i <= self.span_of(x)[0] and self.span_of(x)[1] <= j]
                if not self.derives(t, inside):
                    return False
                rest = [x for x in rest if x not in inside]
            else:
                if not rest or rest[0] != t:
                    return False
                rest = rest[1:]
        return not rest

    def rank(self, item):
        """(0-based rank by score among the items of its symbol and cell, their number): where the
        item sits on its axis of a cube."""
        item = int(item)
        key = (int(self.chart["item_symbol"][item]), int(self.chart["item_cell"][item]))
        scores = self.chart["item_score"][self.by_key[key]]
        return int((scores > self.chart["item_score"][item]).sum()), len(scores)

    def goal_pops(self, j):
        """(pops, worst pop score) of the GOAL search over [0, j): every pop made one GOAL edge."""
        heads = self.chart["edge_head"]
        mask = (self.chart["item_cell"][heads] == self.cell(0, j)) & (self.chart["item_symbol"][heads] == self.goal)
        if not mask.any():
            return 0, None
        es = np.flatnonzero(mask)
        return len(es), float(self._pop_scores(es).min())

    def _pop_scores(self, es):
        """The score of each edge in es as a hypothesis: its rule's score plus its tails' item scores."""
        score = self.chart["edge_score"][es].copy()
        for tail in ("edge_tail0", "edge_tail1"):
            t = self.chart[tail][es]
            ok = t >= 0
            score[ok] += self.chart["item_score"][t[ok]]
        return score

    def cell_pops(self, i, j):
        """(pops, pops on virtual items, worst pop score) of cell [i, j): every pop made one edge."""
        c = self.cell(i, j)
        heads = self.chart["edge_head"]
        mask = (self.chart["item_cell"][heads] == c) & (self.chart["item_symbol"][heads] != self.goal)
        if not mask.any():
            return 0, 0, None
        es = np.flatnonzero(mask)
        score = self._pop_scores(es)
        sym = self.chart["item_symbol"][heads[es]]
        virt = int(self.virtual[sym].sum())
        return len(es), virt, float(score.min())


def diagnose_verse(decoder, words, root: Node, table_index, keep, log=print) -> list[dict]:
    store = decoder.store
    driver = decoder.chart
    result = driver.run(words)
    chart = result.chart
    n = len(words)
    goal = driver.grammar.goal_symbol
    index = ChartIndex(chart, n, store, goal)
    found: dict[int, int | None] = {}
    failures = []

    def match(node: Node):
        kids = [match(c) for c in node.children]
        i, j = node.span()
        if node.lhs == "Q":
            if node.end == n + 1:  # Q -> Q </s>: the root
                return kids[0]
            items = index.by_key.get((goal, index.cell(0, j)), [])
            real_kids = [k for k in kids if k is not None]
            if len(real_kids) != len(kids):
                return None
            for item in items:
                for e in index.edges(item):
                    tails = [int(t) for t in (chart["edge_tail0"][e], chart["edge_tail1"][e]) if t >= 0]
                    if tails == real_kids:
                        node.ours = item
                        return item
            # Moses' glue hypothesis as ours would score it, against the GOAL search of [0, j) (its own cube)
            hyp_score = node.future + sum(float(chart["item_score"][k]) for k in kids) - sum(c.future for c in node.children)
            pops, worst = index.goal_pops(j)
            failures.append({"kind": "glue", "span": [0, j], "width": j, "label": "Q", "moses_future": node.future,
                             "hyp_score": hyp_score, "cell_pops": pops, "cell_virtual_pops": 0, "cell_worst_pop": worst,
                             "in_budget": worst is not None and hyp_score > worst,
                             "children": [[c.lhs, list(c.span())] for c in node.children],
                             "children_ranks": [index.rank(k) for k in kids]})
            return None
        if any(k is None for k in kids):
            return None
        symbol = store.real_label_ids.get(node.lhs)
        key = rule_key(node)
        ids = table_index.get(key, [])
        candidates = [it for it in index.by_key.get((symbol, index.cell(i, j)), [])] if symbol is not None else []
        origins = set(ids)
        for item in candidates:
            for e in index.edges(item):
                rule = int(chart["edge_rule"][e])
                if rule < 0:
                    if rule == -1 and not ids and [w.split('|')[0] for w in node.target] == [words[i]] and not kids:  # pass-through
                        node.ours = item
                        return item
                    continue
                if int(store.rule_origin[rule]) in origins and index._tails_match(e, kids):
                    node.ours = item
                    if chart["item_score"][item] < node.future - 1e-3 * max(1, abs(node.future)):
                        log(f"  warning: our item {item} scores {chart['item_score'][item]:.4f} < Moses' "
                            f"{node.future:.4f} at {node.lhs} [{i},{j})")
                    return item
        # a failure point: why?
        ours_kids = sum(float(chart["item_score"][k]) for k in kids)
        moses_kids = sum(c.future for c in node.children)
        hyp_score = node.future + ours_kids - moses_kids
        pops, virtual_pops, worst = index.cell_pops(i, j)
        record = {"span": [i, j], "width": j - i, "label": node.lhs, "rule": key, "nonterminals": len(kids),
                  "moses_future": node.future, "hyp_score": hyp_score, "cell_pops": pops,
                  "cell_virtual_pops": virtual_pops, "cell_worst_pop": worst,
                  "in_budget": worst is not None and hyp_score > worst,
                  "children_ranks": [index.rank(k) for k in kids]}
        if not ids:
            record["kind"] = "not_in_store" if not (len(kids) == 0 and j - i == 1) else "oov"
        elif not any(keep[r] for r in ids):
            record["kind"] = "table_limit"
        else:
            kept = [r for r in ids if keep[r] and store.top_rule(r) >= 0]
            record["kind"] = "real"
            for r in kept:
                missing = missing_virtual(store, index, store.top_rule(r), node, kids)
                if missing:
                    vsym, (vi, vj) = missing
                    vpops, vvirt, vworst = index.cell_pops(vi, vj)
                    record.update(kind="virtual", virtual_span=[vi, vj], virtual_symbol=store.nonterminal_names[vsym],
                                  virtual_cell_pops=vpops, virtual_cell_virtual_pops=vvirt)
                break
        failures.append(record)
        return None

    match(root)
    return failures, result


def missing_virtual(store, index: ChartIndex, top_rule: int, node: Node, kids: list):
    """The lowest virtual item of this rule's binarization (over the node's context) missing from
    our chart, as (symbol, span); None if all are there."""
    i0 = node.start - 1
    leaves = []   # spans of the source side's leaves in order: terminal runs and nonterminals
    nts = iter(kids)
    # the leaves of the binarization: runs cover consecutive terminals; walk the rule's children
    context = [(a - 1, b, s) for a, b, s in node.context]
    nt_positions = {k for k, _ in node.nonterm}
    pos = 0  # index into context

    def expand(rule):
        """-> (span, real items under it in order) for this rule's children; checks virtual items."""
        nonlocal pos
        spans = []
        items = []
        for child in store.children(rule):
            if store.is_run(child):
                length = len(store.run_words_of(child))
                a = context[pos][0]
                b = context[pos + length - 1][1]
                pos += length
                spans.append((a, b))
            elif store.symbol_is_virtual[child]:
                sub_span, sub_items, missing = expand(int(store.symbol_rule[child]))
                if missing:
                    return None, None, missing
                cands = index.by_key.get((int(child), index.cell(*sub_span)), [])
                if not any(index.derives(c, sub_items) for c in cands):
                    return None, None, (int(child), sub_span)
                spans.append(sub_span)
                items.extend(sub_items)
            else:
                a, b, _ = context[pos]
                pos += 1
                spans.append((a, b))
                items.append(next(nts))
        return (spans[0][0], spans[-1][1]), items, None

    _, _, missing = expand(top_rule)
    return missing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--details", default=os.path.join(RESULTS, "moses_details_default100.txt.gz"))
    parser.add_argument("--verses", default=",".join(map(str, STORED_VERSES)),
                        help="comma-separated test-set line numbers, in DETAILS' order")
    parser.add_argument("--config", default=os.path.join(BUILD, "demo", "config.toml"))
    parser.add_argument("--rule-table", default=os.path.join(BUILD, "demo", "rules.test.gz"))
    parser.add_argument("--source", default=os.path.join(BUILD, "test.es"))
    parser.add_argument("--pop-limit", type=int, default=100)
    parser.add_argument("--setting", action="append", default=[], help="NAME=VALUE (a search setting)")
    parser.add_argument("--results", default=os.path.join(RESULTS, "moses.json"),
                        help="Moses' per-verse scores (bench.bench_moses JSON; its verse 0 is test-set line 0), e.g. "
                             "bench/results/moses_default100_verses200.json for verses 100-199")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    from decoder.decoder import Decoder

    verses = [int(v) for v in args.verses.split(",")]
    roots = parse_details(args.details)
    with open(args.source, encoding="utf-8") as f:
        source = [line.rstrip("\n") for line in f]
    settings = {}
    for s in args.setting:
        name, _, value = s.partition("=")
        settings[name] = int(value) if value.lstrip("-").isdigit() else value
    decoder = Decoder.from_config(args.config, max_unary_depth=0, table_limit=20, pop_limit=args.pop_limit, **settings)
    keys = {rule_key(node) for root in roots.values() for node in walk(root) if node.lhs != "Q"}
    table_index = index_table(args.rule_table, keys)
    keep = decoder.chart.grammar.table_limit.source_rules
    moses_results = json.loads(pathlib.Path(args.results).read_text())["demo"]
    first_line = moses_results.get("skip", 0)  # test-set line of the results' first verse
    moses_scores = {first_line + k: s for k, s in enumerate(moses_results["moses"]["moses-default-100"]["scores"])}
    counts = Counter()
    out = []
    for tid, verse in enumerate(verses):
        words = source[verse].split()
        failures, result = diagnose_verse(decoder, words, roots[tid], table_index, keep)
        translation = decoder.translate(source[verse])
        moses = moses_scores[verse]
        print(f"verse {verse} ({len(words)} words): ours {translation.score:.4f}, Moses {moses:.4f}; "
              f"{len(failures)} failure point(s)")
        for f in failures:
            counts[f["kind"]] += 1
            print("   ", f["kind"], f.get("label"), f.get("span"), "in budget" if f.get("in_budget") else "",
                  f"pops {f.get('cell_pops')} ({f.get('cell_virtual_pops')} virtual)",
                  f"virtual {f.get('virtual_symbol')} {f.get('virtual_span')} pops {f.get('virtual_cell_pops')} "
                  f"({f.get('virtual_cell_virtual_pops')} virtual)" if f["kind"] == "virtual" else "",
                  f.get("rule", ""), "ranks", f.get("children_ranks"),
                  f"gap {f['hyp_score'] - f['cell_worst_pop']:.3f}" if f.get("cell_worst_pop") is not None else "")
        out.append({"verse": verse, "ours": translation.score, "moses": moses, "failures": failures})
    print("failure points by cause:", dict(counts))
    first = Counter()
    for v in out:
        if v["failures"]:
            first[min(v["failures"], key=lambda f: f.get("width", 99))["kind"]] += 1
    print("per verse, the narrowest failure point's cause:", dict(first))
    if args.json:
        runs = json.loads(pathlib.Path(args.json).read_text()) if os.path.exists(args.json) else []
        runs.append({"created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "details": args.details,
                     "pop_limit": args.pop_limit, "settings": settings, "max_unary_depth": 0, "table_limit": 20,
                     "load_average": os.getloadavg()[0], "results": args.results, "counts": counts, "narrowest": first, "verses": out})
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
