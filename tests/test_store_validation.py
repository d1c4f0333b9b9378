"""Damaged values in a compiled store's arrays are refused at open with a one-line StoreError naming the
file (decoder.store.store._validate): non-finite or impossible features (a log score lies within
+-format.FEATURE_LOG_BOUND), flags other than 0/1, and symbol tables that contradict the layout (real
labels first, then virtual symbols, each with the rule that makes it). Without these checks such a store
opens, and translates garbage or fails later with a KeyError traceback."""
import os
import shutil

import numpy as np
import pytest

from decoder.binarize import binarize
from decoder.decoder import Decoder
from decoder.errors import ConfigError
from decoder.store import GrammarStore, StoreError, write_store

from search_fixtures import FEATURES, WEIGHTS, random_rules, random_sentence, write_arpa


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    path = tmp_path_factory.mktemp("compiled") / "store"
    write_store(binarize(random_rules(3, n_rules=40, max_arity=3), "icr"), path, feature_names=FEATURES)
    return path


@pytest.fixture()
def store(compiled, tmp_path):
    """A fresh copy of the compiled store, to damage."""
    copy = tmp_path / "store"
    shutil.copytree(compiled, copy)
    GrammarStore.open(copy)  # whole before the damage
    return copy


def damage(store, name, change):
    """Apply change(array) to the values of NAME.npy in place (its header untouched)."""
    array = np.load(store / f"{name}.npy", mmap_mode="r+")
    change(array)
    array.flush()
    del array


def refused(store, file_name, *fragments):
    with pytest.raises(StoreError) as caught:
        GrammarStore.open(store)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(os.path.join(str(store), file_name) + ":"), message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, 1e30, -1e30, 1e4])
def test_features_out_of_range(store, value):
    def change(features):
        features[len(features) // 2, 1] = value

    damage(store, "features", change)
    refused(store, "features.npy", "corrupt", repr(float(np.float32(value))))


def test_features_at_the_bounds_of_a_log_score_open(store):
    """The most extreme logs of real scores (a score of 0 is stored as -100; log of the largest double is
    709.8) are not damage."""
    def change(features):
        features[0, 0] = -745.0
        features[1, 1] = 709.0

    damage(store, "features", change)
    GrammarStore.open(store)


@pytest.mark.parametrize("name", ["symbol_is_virtual", "rule_carries"])
def test_flags_other_than_0_or_1(store, name):
    def change(flags):
        flags[-1] ^= 0x40  # a flipped bit: 1 -> 65 or 0 -> 64

    damage(store, name, change)
    refused(store, f"{name}.npy", "0/1", "corrupt")


def test_a_real_label_marked_virtual(store):
    def change(flags):
        flags[0] = 1

    damage(store, "symbol_is_virtual", change)
    refused(store, "symbol_is_virtual.npy", "real labels", "corrupt")


def test_a_virtual_symbol_marked_real(store):
    def change(flags):
        flags[-1] = 0

    damage(store, "symbol_is_virtual", change)
    refused(store, "symbol_is_virtual.npy", "corrupt")


def test_a_virtual_symbol_whose_rule_makes_another(store):
    def change(symbol_rule):
        symbol_rule[-1] = symbol_rule[-2]  # in range, but the rule's lhs is the other symbol

    damage(store, "symbol_rule", change)
    refused(store, "symbol_rule.npy", "corrupt")


def test_a_config_naming_a_damaged_store_is_one_line_naming_the_file(store, tmp_path):
    damage(store, "features", lambda features: features.__setitem__((0, 0), np.nan))
    (tmp_path / "config.toml").write_text(f'store = "store"\nlm = "{write_arpa(tmp_path)}"\n'
                                          "[weights]\nlm = 1.0\n")
    with pytest.raises(ConfigError) as caught:
        Decoder.from_config(tmp_path / "config.toml")
    message = str(caught.value)
    assert "\n" not in message and os.path.join(str(store), "features.npy") in message, message


def test_the_undamaged_store_translates(compiled):
    from decoder.lm import LanguageModel

    decoder = Decoder(GrammarStore.open(compiled), LanguageModel(write_arpa(compiled.parent)), WEIGHTS)
    assert decoder.translate(" ".join(random_sentence(3, 6))).text
