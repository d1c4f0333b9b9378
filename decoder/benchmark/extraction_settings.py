"""Q(G') of left-heavy and ICR binarization under several rule extraction settings
(`cky bench --binarization --extraction-settings`).

Xiao et al. (2009) measure left-heavy at 26 times ICR's Q(G') on their Chinese-English grammar:
minimal GHKM and SPMT rules and rules composed of two or three of them, low-frequency rules filtered
out. How far ICR gets below left-heavy is a property of the grammar, so this experiment re-extracts a
pair's rules (from the prepared corpus of its recipe build, BUILD/corpus: train.tok.src, train.trees,
train.align, train.tok.tgt) under settings closer to theirs and to Moses' extract-ghkm defaults, and
measures Q(left), Q(icr), their ratio and where Q(G') lives (decoder.benchmark.buckets) for each, on the
whole table and on the table filtered to the test set (BUILD/corpus/test.tok.src).

The settings (SETTINGS) are of two kinds. Limits of decoder.extract (`compose`, `max_nonterminals`,
`max_symbols`, `max_depth`: they bound composed rules) are applied by extracting again. Moses'
extract-ghkm limits that decoder.extract does not have are applied by filtering the extracted table
on properties every rule line records:

- MaxScope 3 (phrase-extract/extract-ghkm/Options.h): the scope of a rule's source side (Hopkins and
  Langmead 2009: a nonterminal at either end counts one, and so does each pair of adjacent
  nonterminals); Moses drops every rule, minimal ones included, whose scope is larger, so this filter
  is exact;
- MaxRuleSize 3 and MaxNodes 15, on composed rules only: the size of a rule is the number of nodes of
  its target tree fragment that are neither preterminals nor slots (Subgraph::CalcSize) and its node
  count the number of tree nodes, preterminals and slots included (Subgraph::CountNodes), both read off
  the rule's {{Tree}} fragment; a rule is minimal when the extraction of minimal rules alone
  (compose 1) gives it. MaxRuleDepth 3 is decoder.extract's max_depth 3 (the same definition).
  Moses has no bound on nonterminals or symbols; decoder.extract composes at most `compose` minimal
  rules where Moses counts a preterminal rule as size 0, so the table this gives is the part of
  Moses' table made of at most three minimal rules;
- `min_count`: rules seen fewer times than this (the rule count c(rule) of the table) are dropped, as
  Xiao et al. filter low-frequency rules.

A grammar extracted from more sentence pairs has more rules sharing more source sequences (Xiao et al.
extract from about 350,000 pairs); `pairs_share` extracts from the first part of the training pairs
only, to show how the ratio moves with the corpus.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field

from ..extract.rules import Limits
from .buckets import checked_analysis, forced_spans

UNBOUNDED = 1_000_000  # a decoder.extract limit that never binds
CORPUS_FILES = {"source": "train.tok.src", "trees": "train.trees", "alignment": "train.align",
                "target": "train.tok.tgt", "test": "test.tok.src"}
STRATEGIES = ("left", "icr")


@dataclass(frozen=True)
class ExtractionSetting:
    name: str
    what: str
    limits: Limits = field(default_factory=Limits)  # decoder.extract's bounds on composed rules
    min_count: float = 0.0  # drop rules seen fewer times
    max_scope: int | None = None  # every rule (Moses' MaxScope)
    max_size: int | None = None  # composed rules (Moses' MaxRuleSize)
    max_nodes: int | None = None  # composed rules (Moses' MaxNodes)
    pairs_share: float = 1.0  # extract from this share of the training pairs (the first ones)


MOSES_LIMITS = Limits(compose=3, max_nonterminals=UNBOUNDED, max_symbols=UNBOUNDED, max_depth=3)
SETTINGS = (
    ExtractionSetting("recipe", "the recipe's extraction: composed rules of at most 3 minimal rules, 5 nonterminals, "
                                "7 symbols, depth 3"),
    ExtractionSetting("minimal", "minimal rules only", Limits(compose=1)),
    ExtractionSetting("compose-2", "composed rules of at most 2 minimal rules (else as recipe)", Limits(compose=2)),
    ExtractionSetting("count-2", "recipe, rules seen once dropped (Xiao et al.: low-frequency rules filtered out)",
                      min_count=2),
    ExtractionSetting("scope-3", "recipe, rules of scope above 3 dropped (Moses' MaxScope 3)", max_scope=3),
    ExtractionSetting("recipe-1/4", "recipe, from the first quarter of the training pairs", pairs_share=0.25),
    ExtractionSetting("recipe-1/2", "recipe, from the first half of the training pairs", pairs_share=0.5),
    ExtractionSetting("moses", "Moses extract-ghkm defaults (MaxScope 3 on every rule; MaxRuleSize 3, MaxNodes 15, "
                               "MaxRuleDepth 3 on composed rules; no bound on nonterminals or symbols), composed "
                               "rules of at most 3 minimal rules", MOSES_LIMITS, max_scope=3, max_size=3, max_nodes=15),
)


# ---- rule properties -------------------------------------------------------------------------------

def source_scope(source) -> int:
    """Hopkins and Langmead's scope of a source side (words: str, nonterminals: int), as Moses'
    Rule::Scope counts it: one for a nonterminal at each end, one for each pair of adjacent ones."""
    if not source:
        return 0
    nonterminal = [isinstance(s, int) for s in source]
    return nonterminal[0] + nonterminal[-1] + sum(a and b for a, b in zip(nonterminal, nonterminal[1:]))


_FRAGMENT_TOKEN = re.compile(r"\[[^\[\]\s]+\]|\[[^\[\]\s]+|\]|[^\s\[\]]+")


def fragment_shape(tree: str) -> tuple[int, int, int]:
    """(size, nodes, depth) of a target tree fragment "[NP [DT the] [NN]]" as Moses' extract-ghkm counts
    them (Subgraph::CalcSize, CountNodes, CalcDepth): size, the nodes that are neither preterminals nor
    slots; nodes, every tree node (preterminals and slots included, words not); depth, 0 for a slot or
    a preterminal, else one more than the deepest child node."""
    # a node: [label, children]; a slot is a node with no children, a word a str
    stack: list[list] = [["", []]]
    for token in _FRAGMENT_TOKEN.findall(tree):
        if token == "]":
            node = stack.pop()
            stack[-1][1].append(node)
        elif token.startswith("[") and token.endswith("]"):
            stack[-1][1].append([token[1:-1], []])
        elif token.startswith("["):
            stack.append([token[1:], []])
        else:
            stack[-1][1].append(token)
    if len(stack) != 1 or len(stack[0][1]) != 1 or isinstance(stack[0][1][0], str):
        raise ValueError(f"not one tree fragment: {tree!r}")

    def walk(node) -> tuple[int, int, int]:
        children = node[1]
        if not children:  # a slot
            return 0, 1, 0
        if len(children) == 1 and isinstance(children[0], str):  # a preterminal
            return 0, 1, 0
        size, nodes, deepest = 1, 1, 0
        for child in children:
            if isinstance(child, str):
                continue
            s, n, d = walk(child)
            size, nodes, deepest = size + s, nodes + n, max(deepest, d)
        return size, nodes, deepest + 1

    return walk(stack[0][1][0])


def rule_key(rule) -> tuple:
    """What makes two lines of a table one rule (decoder.extract merges occurrences by it)."""
    return rule.lhs, rule.source, rule.target, rule.labels


def source_field(rule) -> str:
    """The rule's source side as a Moses table writes it (what decoder.extract.filtering reads)."""
    return " ".join(s if isinstance(s, str) else "[X]" for s in rule.source) + " [X]"


def apply_setting(rules: list, setting: ExtractionSetting, minimal: set | None = None) -> tuple[list, dict]:
    """The rules a setting's filters keep, and how many each filter dropped (a rule is counted
    under the first filter that drops it). `minimal`: the rule_keys of the minimal rules (needed
    when the setting bounds composed rules)."""
    if (setting.max_size is not None or setting.max_nodes is not None) and minimal is None:
        raise ValueError(f"setting {setting.name}: bounding composed rules needs the minimal rules")
    dropped = {"count": 0, "scope": 0, "size": 0, "nodes": 0}
    kept = []
    for rule in rules:
        if setting.min_count and rule.counts and rule.counts[-1] < setting.min_count:
            dropped["count"] += 1
            continue
        if setting.max_scope is not None and source_scope(rule.source) > setting.max_scope:
            dropped["scope"] += 1
            continue
        if (setting.max_size is not None or setting.max_nodes is not None) and rule.tree \
                and rule_key(rule) not in minimal:
            size, nodes, _ = fragment_shape(rule.tree)
            if setting.max_size is not None and size > setting.max_size:
                dropped["size"] += 1
                continue
            if setting.max_nodes is not None and nodes > setting.max_nodes:
                dropped["nodes"] += 1
                continue
        kept.append(rule)
    return kept, dropped


# ---- the tables ------------------------------------------------------------------------------------

def corpus_of(build: str) -> tuple[dict | None, str | None]:
    """The prepared corpus files of a recipe build, or why there are none."""
    from ..train.pipeline import corpus_file

    paths = {role: str(corpus_file(build, name)) for role, name in CORPUS_FILES.items()}
    missing = [path for path in paths.values() if not os.path.exists(path)]
    return (None, "no " + ", ".join(missing)) if missing else (paths, None)


def limits_name(limits: Limits) -> str:
    def bound(value):
        return "any" if value >= UNBOUNDED else str(value)

    return (f"compose{limits.compose}-nonterminals{bound(limits.max_nonterminals)}-"
            f"symbols{bound(limits.max_symbols)}-depth{limits.max_depth}")


def recipe_table(build: str) -> str | None:
    """The build's own table when the recipe extracted it with decoder.extract's default limits."""
    path = os.path.join(build, "rules.gz")
    try:
        with open(os.path.join(build, "stages.json"), encoding="utf-8") as f:
            limits = json.load(f)["stages"]["extract"]["statistics"]["limits"]
    except (OSError, ValueError, KeyError):
        return None
    return path if os.path.exists(path) and limits == asdict(Limits()) else None


def first_pairs(corpus: dict, share: float, work: str) -> tuple[dict, int]:
    """The training files cut to their first `share` of lines (in `work`), and how many lines that is."""
    from ..grammar import open_text

    with open_text(corpus["source"]) as f:
        total = sum(1 for _ in f)
    lines = max(1, round(total * share))
    directory = os.path.join(work, f"first-{lines}-pairs")
    os.makedirs(directory, exist_ok=True)
    cut = dict(corpus)
    for role in ("source", "trees", "alignment", "target"):
        cut[role] = os.path.join(directory, os.path.basename(corpus[role]))
        if not os.path.exists(cut[role]):
            with open_text(corpus[role]) as f, open(cut[role] + ".tmp", "w", encoding="utf-8") as out:
                for number, line in enumerate(f):
                    if number == lines:
                        break
                    out.write(line)
            os.replace(cut[role] + ".tmp", cut[role])
    return cut, lines


def extracted_table(build: str, corpus: dict, limits: Limits, work: str, pairs_share: float = 1.0,
                    log=print) -> str:
    """A table of the build's corpus (its first `pairs_share` of pairs) under `limits`: the build's
    own for the recipe's limits and the whole corpus, else extracted into `work` (and reused from there)."""
    if limits == Limits() and pairs_share == 1.0 and (own := recipe_table(build)) is not None:
        return own
    from ..extract.corpus import CorpusPaths
    from ..extract.pipeline import ExtractionConfig, run_extraction

    name = limits_name(limits)
    if pairs_share != 1.0:
        corpus, lines = first_pairs(corpus, pairs_share, work)
        name += f"-first-{lines}-pairs"
    out = os.path.join(work, name, "rules.gz")
    summary = os.path.join(work, name, "summary.json")
    if os.path.exists(out) and os.path.exists(summary):
        return out
    log(f"    extracting with {name}")
    run_extraction(ExtractionConfig(corpus=CorpusPaths(corpus["source"], corpus["trees"], corpus["alignment"],
                                                       corpus["target"]),
                                    out=out, summary=summary, limits=limits, progress=False))
    return out


def measure_rules(rules: list, max_iterations: int) -> dict:
    """Q(G') and the buckets of left and icr for a list of rules, and Q(left) / Q(icr)."""
    from ..binarize import binarize, span_tables

    forced = forced_spans(span_tables(rules)[0])
    result: dict = {"rules": len(rules)}
    for strategy in STRATEGIES:
        grammar = binarize(rules, strategy, max_iterations=max_iterations)
        analysis = checked_analysis(grammar, strategy, forced)
        result[strategy] = {"cost": grammar.report["cost"], "binary_rules": grammar.report["binary_rules"],
                            "sweeps": max(len(grammar.report["iterations"]) - 1, 0),
                            "seconds": grammar.report["seconds"], "buckets": analysis}
        del grammar
    result["left_over_icr"] = result["left"]["cost"] / result["icr"]["cost"] if result["icr"]["cost"] else None
    result["forced_lower_bound"] = result["icr"]["buckets"]["forced_lower_bound"]
    return result


def run(build: str, work: str, max_iterations: int = 20, settings=SETTINGS, log=print) -> dict:
    """Every setting's table, whole and filtered to the test set, measured (measure_rules); or the
    reason the build has no corpus to extract from."""
    from ..extract.filtering import TestSetFilter
    from ..grammar import read_rules

    corpus, reason = corpus_of(build)
    if corpus is None:
        return {"skipped": reason}
    started = time.perf_counter()
    test = TestSetFilter.from_file(corpus["test"])
    needs_minimal = any(s.max_size is not None or s.max_nodes is not None for s in settings)
    minimal = None
    if needs_minimal:
        path = extracted_table(build, corpus, Limits(compose=1), work, log=log)
        minimal = {rule_key(rule) for rule in read_rules(path)}
    by_setting: dict = {}
    for source in dict.fromkeys((s.limits, s.pairs_share) for s in settings):  # each extraction read once
        limits, pairs_share = source
        path = extracted_table(build, corpus, limits, work, pairs_share, log=log)
        log(f"    reading {path}")
        extracted = list(read_rules(path, uniform_scores=True))
        for setting in (s for s in settings if (s.limits, s.pairs_share) == source):
            rules, dropped = apply_setting(extracted, setting, minimal)
            entry = {"what": setting.what, "table": path, "limits": asdict(setting.limits),
                     "pairs_share": setting.pairs_share, "extracted": len(extracted),
                     "dropped": dropped, "min_count": setting.min_count, "max_scope": setting.max_scope,
                     "max_size": setting.max_size, "max_nodes": setting.max_nodes}
            for part, chosen in (("full", rules), ("test", [r for r in rules if test.keeps(source_field(r))])):
                log(f"    {setting.name}, {part}: {len(chosen):,} rules")
                entry[part] = measure_rules(chosen, max_iterations)
            by_setting[setting.name] = entry
        del extracted
    by_setting = {s.name: by_setting[s.name] for s in settings}  # in the order of `settings`
    return {"build": os.path.abspath(build), "test": corpus["test"], "settings": by_setting,
            "seconds": round(time.perf_counter() - started, 1)}
