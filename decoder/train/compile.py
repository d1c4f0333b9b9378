"""The compile stage: the full rule table binarized (icr by default: Xiao et al. 2009) into a
grammar store (decoder.store.build_store)."""
from __future__ import annotations

from pathlib import Path

from ..store.build import build_store


def compile_store(rules: Path, store_dir: Path, strategy: str, recorded_table: Path, progress: bool = True) -> dict:
    build = build_store(str(rules), str(store_dir), strategy, source_table=str(recorded_table), progress=progress)
    return {"strategy": strategy, "binary_rules": build.meta.get("n_rules"), "rules_read": build.n_read,
            "labels": build.meta.get("n_real_nonterminals")}
