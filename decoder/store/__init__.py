"""The compiled, memory-mapped grammar store (format: docs/store-format.md).

    from decoder.store import GrammarStore, build_store, write_store
    build_store("rules.gz", "model/store", "icr", filter_path="test.es")    # from a table file
    write_store(binarize(rules, "icr"), "model/store", feature_names=names)  # from rules in memory
    store = GrammarStore.open("model/store")

`build_store` (decoder/store/build.py) reads a Moses table, optionally filters it
to a test set, binarizes it and writes the store; `cky compile` is its command.
"""
from .build import StoreBuild, build_store
from .compile import CompiledGrammar, compile_grammar, save_store, write_store
from .filter import filter_rules, read_sentences, rule_runs
from .format import FORMAT_VERSION, OOV_ID, StoreError
from .store import GrammarStore, SentenceView

__all__ = ["build_store", "StoreBuild", "GrammarStore", "SentenceView", "StoreError", "FORMAT_VERSION", "OOV_ID", "CompiledGrammar",
           "compile_grammar", "save_store", "write_store", "filter_rules", "read_sentences", "rule_runs"]
