"""The SDIG grammar (Ding and Palmer 2005): parallel ET pairs with counts and probabilities, and
root-word transitions.

A grammar is a directory:

    ets.tsv          source ET key, target ET key, count, P(source ET | target ET),
                     P(target ET | source ET), kind ("induced" or "model1"), tab-separated
    transitions.tsv  parent root word, child root word, count (English; "<root>" = no parent)
    stats.json       what induction measured (per level splits and pieces, max-ent weights, timings)

ET keys are decoder.sdig.elementary keys. Induced pairs get relative frequencies; the
word-pair ETs of IBM Model 1 (section 4: every source word gets its likeliest English words)
get the two Model 1 probabilities, unless induction found the same word pair.

`Transitions.logprob(parent, child)` is P(child | parent) with Witten-Bell smoothing towards
an add-one unigram distribution, so unseen pairs and words keep a probability.
"""
from __future__ import annotations

import json
import math
import os
import pathlib
from collections import Counter, defaultdict
from dataclasses import dataclass

from ..errors import GrammarFormatError
from .elementary import parse_key
from .model1 import Model1

ETS_FILE = "ets.tsv"
TRANSITIONS_FILE = "transitions.tsv"
STATS_FILE = "stats.json"
ORDERS_FILE = "orders.tsv"     # Spanish relation, source side (L/R), English left count, right count
MIN_ORDER_COUNT = 5
# A swap needs more than this share of the training cases: with a bare majority (0.5) near-ties
# such as amod R (1,407 L / 1,334 R) and obl L (1,069 / 1,269) were swapped and the order
# model cost 3.1 BLEU on dev; with 2/3 it moves only clear cases (iobj L, conj L).
MIN_SWAP_SHARE = 2 / 3
INDUCED, MODEL1 = "induced", "model1"


MAX_ET_WORDS = 7
# The translation-table limit: the decoder keeps the TABLE_LIMIT likeliest English sides
# (by P(target | source)) of each source ET (0: all). Without it a frequent word had hundreds
# of options (1,025 for "de", most induced pieces with a multi-word English side), which
# made the search 10 times slower for nothing.
TABLE_LIMIT = 20
MIN_ET_COUNT = 3     # induced ET pairs larger than word-to-word seen fewer times are dropped (kept_induced)


def plausible_sizes(source_words: int, target_words: int, max_words: int = MAX_ET_WORDS) -> bool:
    """Whether an ET pair is kept: at most max_words words a side, and neither side more than twice
    the other plus 2 (a root piece can keep many unaligned words on one side: such pairs are
    verse-specific and would translate "." as a whole clause)."""
    return (source_words <= max_words and target_words <= max_words
            and target_words <= 2 * source_words + 2 and source_words <= 2 * target_words + 2)


@dataclass(frozen=True)
class ETPair:
    source: str
    target: str
    count: float
    p_source_given_target: float
    p_target_given_source: float
    kind: str


def is_word_pair(source: str, target: str) -> bool:
    return " " not in source and " " not in target


def kept_induced(pairs: Counter, min_count: float = 1) -> Counter:
    """The induced pairs kept: word-to-word pairs always, larger ones seen at least min_count
    times (a larger ET pair seen once is mostly a verse-specific piece of a partition error)."""
    return Counter({key: c for key, c in pairs.items() if c >= min_count or is_word_pair(*key)})


def et_pairs(pairs: Counter, t_ef: Model1, t_fe: Model1, source_words, per_word: int = 10,
             threshold: float = 0.01, min_count: float = 1) -> list[ETPair]:
    """Induced pairs (kept_induced) with relative frequencies, plus Model 1 word pairs for
    every source word: its `per_word` likeliest English words with t(e|f) >= threshold."""
    pairs = kept_induced(pairs, min_count)
    source_totals, target_totals = Counter(), Counter()
    for (f, e), c in pairs.items():
        source_totals[f] += c
        target_totals[e] += c
    out = [ETPair(f, e, c, c / target_totals[e], c / source_totals[f], INDUCED)
           for (f, e), c in sorted(pairs.items())]
    for f_word in sorted(set(source_words)):
        for e_word, p in t_ef.best(f_word, per_word, threshold):
            if (f"{f_word}/0", f"{e_word}/0") in pairs:
                continue
            out.append(ETPair(f"{f_word}/0", f"{e_word}/0", 0, max(t_fe.prob(e_word, f_word), 1e-7), p, MODEL1))
    return out


def write_grammar(directory, pairs: list[ETPair], transitions: Counter, stats: dict,
                  orders: dict | None = None) -> None:
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ETS_FILE), "w", encoding="utf-8") as out:
        for p in pairs:
            out.write(f"{p.source}\t{p.target}\t{p.count:g}\t{p.p_source_given_target:.6g}\t"
                      f"{p.p_target_given_source:.6g}\t{p.kind}\n")
    with open(os.path.join(directory, TRANSITIONS_FILE), "w", encoding="utf-8") as out:
        for (parent, child), count in sorted(transitions.items()):
            out.write(f"{parent}\t{child}\t{count}\n")
    with open(os.path.join(directory, STATS_FILE), "w", encoding="utf-8") as out:
        json.dump(stats, out, indent=2)
    with open(os.path.join(directory, ORDERS_FILE), "w", encoding="utf-8") as out:
        for (relation, side), sides in sorted((orders or {}).items()):
            out.write(f"{relation}\t{side}\t{sides.get('L', 0)}\t{sides.get('R', 0)}\n")


def swapped_orders(orders: dict, share: float | None = None) -> set[tuple[str, str]]:
    """The (relation, source side) pairs whose child ETs went to the other English side in more
    than `share` (default MIN_SWAP_SHARE) of at least MIN_ORDER_COUNT training cases: the child
    order model's decisions."""
    share = MIN_SWAP_SHARE if share is None else share
    return {key for key, sides in orders.items()
            if sum(sides.values()) >= MIN_ORDER_COUNT
            and sides.get("R" if key[1] == "L" else "L", 0) > share * sum(sides.values())}


class Transitions:
    def __init__(self, counts: Counter):
        self.counts = counts
        self.by_parent: dict[str, Counter] = defaultdict(Counter)
        self.unigram: Counter = Counter()
        for (parent, child), c in counts.items():
            self.by_parent[parent][child] += c
            self.unigram[child] += c
        self.total = sum(self.unigram.values())
        self.vocabulary = len(self.unigram) + 1
        self.parent_totals = {p: sum(c.values()) for p, c in self.by_parent.items()}
        self._cache: dict[tuple[str, str], float] = {}

    def logprob(self, parent: str, child: str) -> float:
        key = (parent, child)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        unigram = (self.unigram.get(child, 0) + 1) / (self.total + self.vocabulary)
        children = self.by_parent.get(parent)
        if children is None:
            value = math.log(unigram)
        else:
            types = len(children)
            value = math.log((children.get(child, 0) + types * unigram) / (self.parent_totals[parent] + types))
        self._cache[key] = value
        return value


class Grammar:
    """ET pairs indexed by source key, and the transitions."""

    def __init__(self, pairs: list[ETPair], transitions: Counter, max_source_words: int = MAX_ET_WORDS,
                 orders: dict | None = None, table_limit: int = TABLE_LIMIT):
        self.by_source: dict[str, list[ETPair]] = defaultdict(list)
        self.max_source_words = 1
        self.table_limit = table_limit
        for pair in pairs:
            size = pair.source.count(" ") + 1
            if not plausible_sizes(size, pair.target.count(" ") + 1, max_source_words):
                continue
            self.max_source_words = max(self.max_source_words, size)
            self.by_source[pair.source].append(pair)
        if table_limit > 0:
            for source, options in self.by_source.items():
                if len(options) > table_limit:
                    options.sort(key=lambda pair: -pair.p_target_given_source)   # stable: file order on ties
                    del options[table_limit:]
        self.transitions = Transitions(transitions)
        # root word -> the other words of the source ETs rooted at it: the forest grows an ET
        # at a node only through children with one of these words
        self.companions: dict[str, set[str]] = defaultdict(set)
        for key in self.by_source:
            words, heads = parse_key(key)
            root = heads.index(-1)
            self.companions[words[root]].update(w for i, w in enumerate(words) if i != root)
        self.swapped = swapped_orders(orders or {})

    def order_swaps(self, relation: str, side: str) -> bool:
        return (relation, side) in self.swapped

    @classmethod
    def load(cls, directory, max_source_words: int = MAX_ET_WORDS, table_limit: int = TABLE_LIMIT) -> "Grammar":
        directory = os.fspath(directory)
        pairs = []
        path = os.path.join(directory, ETS_FILE)
        if not os.path.exists(path):
            raise GrammarFormatError(path, 0, "no SDIG grammar here (run the SDIG induction first)")
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                fields = line.rstrip("\n").split("\t")
                try:
                    if len(fields) != 6 or fields[5] not in (INDUCED, MODEL1):
                        raise ValueError("expected 6 tab-separated fields ending in induced|model1")
                    parse_key(fields[0]), parse_key(fields[1])
                    pair = ETPair(fields[0], fields[1], float(fields[2]), float(fields[3]), float(fields[4]),
                                  fields[5])
                    if not (0 < pair.p_source_given_target <= 1 and 0 < pair.p_target_given_source <= 1):
                        raise ValueError("probabilities must be in (0, 1]")
                except ValueError as error:
                    raise GrammarFormatError(path, number, str(error)) from None
                pairs.append(pair)
        transitions = Counter()
        path = os.path.join(directory, TRANSITIONS_FILE)
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                fields = line.rstrip("\n").split("\t")
                if len(fields) != 3 or not fields[2].isdigit():
                    raise GrammarFormatError(path, number, "expected: parent word, child word, count")
                transitions[fields[0], fields[1]] = int(fields[2])
        orders: dict = {}
        path = os.path.join(directory, ORDERS_FILE)
        if os.path.exists(path):     # grammars without it have no order model
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    fields = line.rstrip("\n").split("\t")
                    if len(fields) != 4 or fields[1] not in ("L", "R") or not (fields[2] + fields[3]).isdigit():
                        raise GrammarFormatError(path, number, "expected: relation, L|R, left count, right count")
                    orders[fields[0], fields[1]] = Counter(L=int(fields[2]), R=int(fields[3]))
        return cls(pairs, transitions, max_source_words, orders, table_limit)


def refilter_grammar(source_dir, out_dir, min_count: float) -> dict:
    """Write a copy of a grammar whose induced pairs are kept_induced(min_count) with their relative
    frequencies recomputed from the counts: the grammar train_grammar(min_count=...) writes,
    without partitioning again (the Model 1 word pairs and transitions are unchanged)."""
    import shutil

    source_dir, out_dir = os.fspath(source_dir), os.fspath(out_dir)
    path = os.path.join(source_dir, ETS_FILE)
    induced, model1 = Counter(), []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 6:
                raise GrammarFormatError(path, number, "expected 6 tab-separated fields")
            if fields[5] == INDUCED:
                induced[fields[0], fields[1]] = float(fields[2])
            else:
                model1.append(ETPair(fields[0], fields[1], float(fields[2]), float(fields[3]), float(fields[4]),
                                     fields[5]))
    kept = kept_induced(induced, min_count)
    source_totals, target_totals = Counter(), Counter()
    for (f, e), c in kept.items():
        source_totals[f] += c
        target_totals[e] += c
    pairs = [ETPair(f, e, c, c / target_totals[e], c / source_totals[f], INDUCED) for (f, e), c in sorted(kept.items())]
    os.makedirs(out_dir, exist_ok=True)
    for name in (TRANSITIONS_FILE, ORDERS_FILE):
        if os.path.exists(os.path.join(source_dir, name)):
            shutil.copy(os.path.join(source_dir, name), os.path.join(out_dir, name))
    stats_path = os.path.join(source_dir, STATS_FILE)
    stats = json.loads(pathlib.Path(stats_path).read_text(encoding="utf-8")) if os.path.exists(stats_path) else {}
    stats.update(induced_et_pairs_kept=len(kept), min_count=min_count, refiltered_from=source_dir)
    with open(os.path.join(out_dir, ETS_FILE), "w", encoding="utf-8") as out:
        for p in pairs + model1:
            out.write(f"{p.source}\t{p.target}\t{p.count:g}\t{p.p_source_given_target:.6g}\t"
                      f"{p.p_target_given_source:.6g}\t{p.kind}\n")
    with open(os.path.join(out_dir, STATS_FILE), "w", encoding="utf-8") as out:
        json.dump(stats, out, indent=2)
    return stats
