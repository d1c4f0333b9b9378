"""The compiled, memory-mapped grammar store (format: docs/store-format.md).

    from decoder.store import GrammarStore, write_store
    write_store(binarize(rules, "icr"), "model/store", feature_names=names)
    store = GrammarStore.open("model/store")

`cky compile` (decoder/store/cli.py) reads a Moses table, optionally filters it
to a test set, binarizes it and writes the store.
"""
from .compile import CompiledGrammar, compile_grammar, save_store, write_store
from .filter import filter_rules, read_sentences, rule_runs
from .format import FORMAT_VERSION, OOV_ID, StoreError
from .store import GrammarStore, SentenceView

__all__ = ["GrammarStore", "SentenceView", "StoreError", "FORMAT_VERSION", "OOV_ID", "CompiledGrammar",
           "compile_grammar", "save_store", "write_store", "filter_rules", "read_sentences", "rule_runs"]
