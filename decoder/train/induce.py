"""The induce stage of `cky train --system sdig`: the SDIG grammar (Ding and Palmer 2005,
section 3) of the training corpus, from its parallel dependency trees and word alignment
(decoder.sdig.train.train_grammar: IBM Model 1 both ways, the max-ent scorer of word pairs trained
on the alignment, hierarchical tree partitioning, the induced ET pairs plus Model 1 word ETs),
written as a grammar directory (decoder.sdig.grammar)."""
from __future__ import annotations

from pathlib import Path

from ..sdig.train import train_grammar

KEPT_STATISTICS = ("verses", "induced_et_pairs", "induced_et_pairs_kept", "min_count", "model1_et_pairs",
                   "transitions")


def induce_grammar(source_trees: Path, target_trees: Path, alignment: Path, grammar_dir: Path) -> dict:
    statistics = train_grammar(None, grammar_dir, source_trees=source_trees, target_trees=target_trees,
                               alignment=alignment)
    kept = {key: statistics[key] for key in KEPT_STATISTICS if key in statistics}
    kept["et_pairs"] = statistics["induced_et_pairs_kept"] + statistics["model1_et_pairs"]
    kept["maxent_training_accuracy"] = round(statistics["maxent"]["training_accuracy"], 4)
    return kept
