"""Train an SDIG grammar from a data build: Model 1 both ways, the max-ent scorer on the
eflomal alignments, hierarchical partitioning of every tree pair, ET pairs + Model 1 word ETs.

    from decoder.sdig.train import train_grammar, train_word_grammar
    stats = train_grammar("models/bible-es-en/build", "model-sdig/grammar")
    stats = train_word_grammar("models/bible-es-en/build", "model-sdig/gword")   # the baseline

Inputs (a `cky data bible-es-en --dependencies` build): train.es.conllu, train.en.conllu,
train.align (Pharaoh, Spanish index first); `source_trees`, `target_trees` and `alignment` name
other files instead (`cky train --system sdig` keeps its own layout). `limit` uses only the first
verses.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..data.align import read_pharaoh
from ..errors import InputError
from collections import Counter

from .deptree import read_conllu
from .grammar import MAX_ET_WORDS, MIN_ET_COUNT, et_pairs, swapped_orders, write_grammar
from .heuristics import FEATURES, PairContext, train_maxent, training_examples
from .induce import CATEGORY_SEQUENCE, induce, maxent_pair_scorer
from .model1 import train_model1


def log(message: str) -> None:
    print(f"[sdig train] {message}", file=sys.stderr, flush=True)


def read_alignments(path, limit: int | None = None) -> list[set[tuple[int, int]]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if limit is not None and number > limit:
                break
            out.append(set(read_pharaoh(line, str(path), number)))
    return out


def train_grammar(data_dir, out_dir, limit: int | None = None, maxent_sentences: int = 2000,
                  model1_iterations: int = 5, threshold: float = 0.5, max_source_words: int = MAX_ET_WORDS,
                  min_count: float = MIN_ET_COUNT, *, source_trees=None, target_trees=None,
                  alignment=None) -> dict:
    data_dir = Path(data_dir) if data_dir is not None else None
    source_trees = Path(source_trees) if source_trees is not None else data_dir / "train.es.conllu"
    target_trees = Path(target_trees) if target_trees is not None else data_dir / "train.en.conllu"
    alignment = Path(alignment) if alignment is not None else data_dir / "train.align"
    started = time.perf_counter()
    timings = {}
    f_trees = list(read_conllu(source_trees))[:limit]
    e_trees = list(read_conllu(target_trees))[:limit]
    alignments = read_alignments(alignment, limit)
    if not (len(f_trees) == len(e_trees) == len(alignments)):
        raise InputError(data_dir or source_trees, f"{len(f_trees)} source trees ({source_trees.name}), "
                                                   f"{len(e_trees)} target trees ({target_trees.name}) and "
                                                   f"{len(alignments)} alignments ({alignment.name}): the files "
                                                   "do not match")
    for k, (f, e, links) in enumerate(zip(f_trees, e_trees, alignments), 1):
        if any(j >= len(f) or i >= len(e) for j, i in links):
            raise InputError(alignment, "an alignment point outside the verse's trees", k)
    timings["read"] = round(time.perf_counter() - started, 1)

    stage = time.perf_counter()
    f_sentences = [t.words for t in f_trees]
    e_sentences = [t.words for t in e_trees]
    t_ef = train_model1(f_sentences, e_sentences, model1_iterations)   # t(e | f)
    t_fe = train_model1(e_sentences, f_sentences, model1_iterations)   # t(f | e)
    timings["model1"] = round(time.perf_counter() - stage, 1)
    log(f"Model 1: {timings['model1']} s")

    stage = time.perf_counter()
    n_maxent = min(maxent_sentences, len(f_trees))
    X, y = training_examples([PairContext(e_trees[k], f_trees[k], t_ef, t_fe) for k in range(n_maxent)],
                             alignments[:n_maxent])
    maxent = train_maxent(X, y)
    accuracy = float(((maxent.probability(X) >= threshold) == (y == 1)).mean())
    timings["maxent"] = round(time.perf_counter() - stage, 1)
    log(f"max-ent: {len(y)} pairs from {n_maxent} verses, {int(y.sum())} linked, accuracy {accuracy:.3f}")

    stage = time.perf_counter()
    scorer = maxent_pair_scorer(maxent)

    def progress(k):
        if (k + 1) % 2000 == 0:
            log(f"partitioned {k + 1}/{len(f_trees)} verses ({(k + 1) / (time.perf_counter() - stage):.0f}/s)")

    counts = induce(e_trees, f_trees, lambda k: PairContext(e_trees[k], f_trees[k], t_ef, t_fe),
                    lambda k: scorer, threshold, max_source_words, progress)
    timings["partition"] = round(time.perf_counter() - stage, 1)
    pairs = et_pairs(counts.pairs, t_ef, t_fe, {w for s in f_sentences for w in s}, min_count=min_count)
    # P(root(v) | root(Parent(v))): the final partitions' root pairs plus every head-dependent pair
    # of the English trees (the same statistic where every word is its own ET): the root pairs
    # alone are sparse (dev BLEU with the LM 22.35 alone, 22.84 with the word pairs added)
    transitions = counts.transitions + word_transitions(e_trees)
    induced_sizes: dict[int, int] = {}
    for (f_key, _), c in counts.pairs.items():
        induced_sizes[f_key.count(" ") + 1] = induced_sizes.get(f_key.count(" ") + 1, 0) + 1
    stats = {
        "verses": len(f_trees),
        "category_sequence": [list(c) for c in CATEGORY_SEQUENCE],
        "splits_per_level": counts.splits_per_level,
        "new_pieces_per_level": counts.new_pieces_per_level,
        "induced_et_pairs": len(counts.pairs),
        "induced_et_pairs_kept": sum(1 for p in pairs if p.kind != "model1"), "min_count": min_count,
        "induced_et_pairs_by_source_words": dict(sorted(induced_sizes.items())),
        "model1_et_pairs": sum(1 for p in pairs if p.kind == "model1"),
        "transitions": len(transitions), "partition_root_transitions": len(counts.transitions),
        "maxent": {**maxent.to_json(), "training_pairs": len(y), "linked": int(y.sum()),
                   "training_accuracy": accuracy, "verses": n_maxent},
        "threshold": threshold, "max_source_words": max_source_words, "model1_iterations": model1_iterations,
        "partition_verses_per_second": round(len(f_trees) / max(counts.seconds, 1e-9), 1),
        "timings_seconds": {**timings, "total": round(time.perf_counter() - started, 1)},
        "features": list(FEATURES),
    }
    stats["order_model"] = {"relation_sides": len(counts.orders),
                            "swapped": sorted(f"{r} {s}" for r, s in swapped_orders(counts.orders))}
    write_grammar(out_dir, pairs, transitions, stats, counts.orders)
    log(f"{len(counts.pairs)} induced ET pairs, {stats['model1_et_pairs']} Model 1 word ETs -> {os.fspath(out_dir)}")
    return stats


def word_transitions(e_trees) -> Counter:
    """(head word, dependent word) counts of the English trees ("<root>" heads the root): the
    transitions of a derivation where every English word is its own ET."""
    from .induce import ROOT

    counts: Counter = Counter()
    for tree in e_trees:
        for i, head in enumerate(tree.heads):
            counts[ROOT if head == -1 else tree.words[head], tree.words[i]] += 1
    return counts


def train_word_grammar(data_dir, out_dir, limit: int | None = None, model1_iterations: int = 5) -> dict:
    """The word-based baseline of the paper's comparison, needing nothing new: only the Model 1
    word-pair ETs of section 4 (every Spanish word's likeliest English words, as train_grammar
    adds them) and word-to-word transitions (every English word its own ET): no partitioning."""
    data_dir = Path(data_dir)
    started = time.perf_counter()
    f_trees = list(read_conllu(data_dir / "train.es.conllu"))[:limit]
    e_trees = list(read_conllu(data_dir / "train.en.conllu"))[:limit]
    if len(f_trees) != len(e_trees):
        raise InputError(data_dir, f"{len(f_trees)} Spanish trees and {len(e_trees)} English trees: "
                                   f"the files do not match")
    f_sentences = [t.words for t in f_trees]
    e_sentences = [t.words for t in e_trees]
    t_ef = train_model1(f_sentences, e_sentences, model1_iterations)
    t_fe = train_model1(e_sentences, f_sentences, model1_iterations)
    pairs = et_pairs(Counter(), t_ef, t_fe, {w for s in f_sentences for w in s})
    transitions = word_transitions(e_trees)
    stats = {"verses": len(f_trees), "word_baseline": True, "induced_et_pairs": 0, "model1_et_pairs": len(pairs),
             "transitions": len(transitions), "model1_iterations": model1_iterations,
             "timings_seconds": {"total": round(time.perf_counter() - started, 1)}}
    write_grammar(out_dir, pairs, transitions, stats)
    log(f"word baseline: {len(pairs)} Model 1 word ETs, {len(transitions)} transitions -> {os.fspath(out_dir)}")
    return stats
