"""The grammar store format (docs/store-format.md): version, array specs, errors.

One table (`ARRAYS`) says which `.npy` files a store has, their dtype and their
length in terms of `meta.json`, so that compiling and opening check the same thing.
"""
from __future__ import annotations

import numpy as np

from ..errors import StoreError

FORMAT_VERSION = 1
META_FILE = "meta.json"
NONTERMINALS_FILE = "nonterminals.txt"
SOURCE_VOCAB_FILE = "source_vocab.txt"
TARGET_VOCAB_FILE = "target_vocab.txt"
TREES_FILE = "trees.bin"
TEXT_FILES = (NONTERMINALS_FILE, SOURCE_VOCAB_FILE, TARGET_VOCAB_FILE)  # one line per id

# The id of a source word that is in no rule (no run can match it).
OOV_ID = -1




# name -> (dtype, expected first dimension as a function of meta, or None when it is free).
# `meta["_n_pair_keys"]`-style counts are not in meta: index lengths are checked against each other.
ARRAYS: dict[str, tuple[np.dtype, object]] = {
    "symbol_carried": (np.dtype(np.int32), lambda m: m["n_nonterminals"]),
    "symbol_is_virtual": (np.dtype(np.uint8), lambda m: m["n_nonterminals"]),
    "symbol_rule": (np.dtype(np.int32), lambda m: m["n_nonterminals"]),
    "run_offsets": (np.dtype(np.int64), lambda m: m["n_runs"] + 1),
    "run_words": (np.dtype(np.int32), None),
    "run_hash_keys": (np.dtype(np.uint64), lambda m: m["n_runs"]),
    "run_hash_runs": (np.dtype(np.int32), lambda m: m["n_runs"]),
    "rule_lhs": (np.dtype(np.int32), lambda m: m["n_rules"]),
    "rule_child0": (np.dtype(np.int32), lambda m: m["n_rules"]),
    "rule_child1": (np.dtype(np.int32), lambda m: m["n_rules"]),
    "rule_target_offsets": (np.dtype(np.int64), lambda m: m["n_rules"] + 1),
    "rule_target": (np.dtype(np.int32), None),
    "rule_carries": (np.dtype(np.uint8), lambda m: m["n_rules"]),
    "rule_origin": (np.dtype(np.int64), lambda m: m["n_rules"]),
    "source_top_rule": (np.dtype(np.int32), lambda m: m["n_source_rules"]),
    "features": (np.dtype(np.float32), lambda m: m["n_source_rules"]),
    "tree_offsets": (np.dtype(np.int64), lambda m: m["n_source_rules"] + 1),
    "pair_keys": (np.dtype(np.int64), None),
    "pair_offsets": (np.dtype(np.int64), None),
    "pair_rules": (np.dtype(np.int32), None),
    "single_keys": (np.dtype(np.int64), None),
    "single_offsets": (np.dtype(np.int64), None),
    "single_rules": (np.dtype(np.int32), None),
}

# Offsets into a ragged array (name -> the array, or the file, they index): checked at open to
# start at 0, never decrease and end at that array's length.
OFFSETS = {
    "run_offsets": "run_words",
    "rule_target_offsets": "rule_target",
    "tree_offsets": TREES_FILE,
    "pair_offsets": "pair_rules",
    "single_offsets": "single_rules",
}

# Arrays of ids -> (smallest, largest + 1) allowed, given the store's counts (`StoreCounts`).
# Checked at open with one vectorized min and max each, so that a damaged file cannot make the
# decoder index outside another array (a segfault in compiled code).
ID_RANGES = {
    "symbol_rule": lambda c: (-1, c.n_rules),
    "run_words": lambda c: (0, c.n_source_words),
    "run_hash_runs": lambda c: (0, c.n_runs),
    "rule_lhs": lambda c: (0, c.n_nonterminals),
    "rule_child0": lambda c: (0, c.n_symbols),
    "rule_child1": lambda c: (-1, c.n_symbols),
    # a block reference -1-k needs k below the blocks both children carry
    "rule_target": lambda c: (-2 * c.max_carried, c.n_target_words),
    "rule_origin": lambda c: (-1, c.n_source_rules),
    "source_top_rule": lambda c: (-1, c.n_rules),
    "pair_rules": lambda c: (0, c.n_rules),
    "single_rules": lambda c: (0, c.n_rules),
    "pair_keys": lambda c: (0, c.n_symbols * c.n_symbols),
    "single_keys": lambda c: (0, c.n_symbols),
}
# Arrays of flags: every value 0 or 1.
FLAGS = ("symbol_is_virtual", "rule_carries")
# The largest magnitude a stored feature (a natural log of a rule table's score) can have: the log of
# any positive double lies in [-745, 710], and a score of 0 is stored as MOSES_LOG_OF_ZERO (-100).
# A value beyond it, inf or NaN is a damaged features.npy.
FEATURE_LOG_BOUND = 1000.0
# Key arrays that look-ups binary-search: strictly increasing.
SORTED_KEYS = ("pair_keys", "single_keys")

META_KEYS = ("format_version", "strategy", "report", "feature_names", "n_real_nonterminals",
             "n_nonterminals", "n_runs", "n_rules", "n_source_rules", "max_run_length", "created",
             "source_table", "filter")
