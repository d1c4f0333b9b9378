"""A missing, corrupt or mismatched grammar store gives a StoreError naming the path."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from decoder.binarize import binarize
from decoder.grammar import make_rule
from decoder.store import GrammarStore, StoreError, write_store
from decoder.store.runs import hash_runs, match_run_array


@pytest.fixture()
def store_dir(tmp_path):
    rules = [
        make_rule("NP", ["el", 0], ["the", 0], ["NN"], [0.5, 0.25], tree="[NP [DT the] [NN]]"),
        make_rule("S", [0, "come", 1], [0, "eats", 1], ["NP", "NP"], [0.5, 1.0]),
        make_rule("NN", ["perro"], ["dog"], [], [0.9, 0.8], tree="[NN dog]"),
    ]
    path = tmp_path / "store"
    write_store(binarize(rules, "left"), path)
    assert len(GrammarStore.open(path)) > 0
    return path


def assert_store_error(path, *fragments):
    with pytest.raises(StoreError) as caught:
        GrammarStore.open(path)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return caught.value


def test_missing_directory(tmp_path):
    error = assert_store_error(tmp_path / "nowhere", "nowhere", "not a directory")
    assert error.path == str(tmp_path / "nowhere")


def test_directory_without_meta(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_store_error(tmp_path / "empty", "meta.json")


def test_corrupt_meta(store_dir):
    (store_dir / "meta.json").write_text("{not json")
    assert_store_error(store_dir, "meta.json", "unreadable")


@pytest.mark.parametrize("version", [0, 2, None, "1"])
def test_wrong_format_version(store_dir, version):
    meta = json.loads((store_dir / "meta.json").read_text())
    meta["format_version"] = version
    (store_dir / "meta.json").write_text(json.dumps(meta))
    assert_store_error(store_dir, str(store_dir), "format version", "recompile")


@pytest.mark.parametrize("name", ["rule_lhs", "pair_keys", "features", "run_hash_keys"])
def test_missing_array(store_dir, name):
    os.remove(store_dir / f"{name}.npy")
    assert_store_error(store_dir, f"{name}.npy", "missing")


@pytest.mark.parametrize("keep", [0.3, 0.9])  # inside the header, inside the data
def test_truncated_array(store_dir, keep):
    path = store_dir / "rule_target_offsets.npy"
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    assert_store_error(store_dir, "rule_target_offsets.npy", "corrupt")


def test_array_of_wrong_dtype(store_dir):
    lhs = np.load(store_dir / "rule_lhs.npy")
    np.save(store_dir / "rule_lhs.npy", lhs.astype(np.int64))
    assert_store_error(store_dir, "rule_lhs.npy", "dtype")


def test_array_of_wrong_length(store_dir):
    np.save(store_dir / "rule_child0.npy", np.zeros(1, np.int32))
    assert_store_error(store_dir, "rule_child0.npy", "shape")


def test_arrays_that_do_not_belong_together(store_dir):
    np.save(store_dir / "rule_target.npy", np.zeros(1, np.int32))
    assert_store_error(store_dir, "rule_target.npy", "rule_target_offsets")


def test_truncated_trees(store_dir):
    path = store_dir / "trees.bin"
    path.write_bytes(path.read_bytes()[:5])
    assert_store_error(store_dir, "trees.bin", "truncated")


def test_missing_vocabulary(store_dir):
    os.remove(store_dir / "source_vocab.txt")
    assert_store_error(store_dir, "source_vocab.txt", "missing")


def test_interrupted_recompile_is_detected(store_dir):
    # save_store removes meta.json first and writes it last
    os.remove(store_dir / "meta.json")
    assert_store_error(store_dir, "meta.json", "did not finish")


def test_store_helpers_on_a_small_store(store_dir):
    store = GrammarStore.open(store_dir)
    assert store.meta["format_version"] == 1
    top = store.top_rule(0)
    assert store.tree(0) == "[NP [DT the] [NN]]" and store.tree(1) is None
    assert store.source_rule(top).target == ("the", 0)
    np.testing.assert_allclose(store.rule_features(top), np.log([0.5, 0.25]), rtol=1e-6)
    view = store.sentence_view("el perro come el gato".split())
    assert view.word_ids[-1] == -1
    spans = [(s, e, store.run_words_of(r)) for s, e, r in view.runs.tolist()]
    assert spans == [(0, 1, ("el",)), (1, 2, ("perro",)), (2, 3, ("come",)), (3, 4, ("el",))]
    lexical = [(s, e) for s, e, _, _ in view.lexical_rules()]
    assert lexical == [(1, 2)]
    (rule,) = store.rules_for_single(view.runs[1, 2])
    assert store.target_side(rule) == ("dog",)
    assert store.binary_rule(rule).lhs == "NN"


def test_run_matching_checks_words_behind_equal_hashes():
    offsets = np.array([0, 2, 4], dtype=np.int64)
    words = np.array([1, 2, 3, 4], dtype=np.int32)  # runs (1 2) and (3 4)
    sentence = np.array([3, 4, 1, 2], dtype=np.int32)
    collide = hash_runs(np.array([0, 2]), np.array([3, 4], dtype=np.int32))[0]
    # both runs filed under the hash of (3 4): only the real (3 4) may match there
    keys = np.array([collide, collide], dtype=np.uint64)
    table = match_run_array(sentence, keys, np.array([0, 1], dtype=np.int32), offsets, words, 2, 10)
    assert table.tolist() == [[0, 2, 11]]


def test_empty_grammar_round_trips(tmp_path):
    write_store(binarize([], "icr"), tmp_path / "store")
    store = GrammarStore.open(tmp_path / "store")
    assert len(store) == 0 and store.n_source_rules == 0
    assert store.match_runs(store.source_word_ids(["a", "b"])) == []
    assert len(store.rules_for_pair(0, 0)) == 0 and len(store.rules_for_single(0)) == 0


def test_undefined_virtual_symbol_is_refused(tmp_path):
    from decoder.binarize import BinaryGrammar, BinaryRule

    grammar = BinaryGrammar("left", [make_rule("S", [0, 1], [0, 1], ["A", "B"])],
                            rules=[BinaryRule("S", ("<A B || [0] [1]>", "C"), (0, 1), 0)])
    with pytest.raises(ValueError, match="never defined"):
        write_store(grammar, tmp_path / "store")


# -- replacing a store that a reader has open ----------------------------------------

REPLACE_WHILE_OPEN = r"""
import sys
from decoder.binarize import binarize
from decoder.grammar import make_rule
from decoder.store import GrammarStore, write_store

path = sys.argv[1]
def snapshot(store):
    return ([store.binary_rule(r) for r in range(len(store))], store.source_vocab, store.target_vocab,
            [store.tree(i) for i in range(store.n_source_rules)], store.features.tolist())

old = GrammarStore.open(path)  # every array mapped; the text files not decoded yet
new_rules = [make_rule("VP", ["corre", "mucho"], ["runs", "a", "lot"], [], [0.1, 0.2], tree="[VP runs a lot]")]
write_store(binarize(new_rules, "left"), path)
print(repr(snapshot(old)))
new = GrammarStore.open(path)
print(repr(snapshot(new)))
"""


def test_recompiling_leaves_an_open_store_intact(store_dir):
    """Compiling into the directory of an open store neither crashes its reader (SIGBUS on a
    truncated mapping) nor changes what it reads; a new open sees the new store."""
    import subprocess
    import sys

    expected_old = GrammarStore.open(store_dir)
    expected = ([expected_old.binary_rule(r) for r in range(len(expected_old))], expected_old.source_vocab,
                expected_old.target_vocab, [expected_old.tree(i) for i in range(expected_old.n_source_rules)],
                expected_old.features.tolist())
    del expected_old
    result = subprocess.run([sys.executable, "-c", REPLACE_WHILE_OPEN, str(store_dir)], capture_output=True,
                            text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    old_seen, new_seen = result.stdout.splitlines()
    assert old_seen == repr(expected)
    assert "corre" in new_seen and "perro" not in new_seen
    assert sorted(os.listdir(store_dir.parent)) == ["store"]  # no temporary directory left behind


def test_replacing_without_an_atomic_exchange(store_dir, monkeypatch):
    """Where renameat2 is missing, two renames replace the store; a reader still sees the old one."""
    from decoder.store import compile as store_compile

    monkeypatch.setattr(store_compile, "_rename_exchange", lambda a, b: False)
    old = GrammarStore.open(store_dir)
    write_store(binarize([make_rule("NN", ["gato"], ["cat"], [], [0.5, 0.5])], "left"), store_dir)
    assert "perro" in old.source_vocab and GrammarStore.open(store_dir).source_vocab == ["gato"]
    assert sorted(os.listdir(store_dir.parent)) == ["store"]


def test_failed_compile_keeps_the_old_store(store_dir, monkeypatch):
    from decoder.store import compile as store_compile

    def broken(compiled, path):
        raise OSError("disk full")

    monkeypatch.setattr(store_compile, "_write_files", broken)
    with pytest.raises(OSError, match="disk full"):
        write_store(binarize([make_rule("NN", ["gato"], ["cat"], [], [0.5, 0.5])], "left"), store_dir)
    assert "perro" in GrammarStore.open(store_dir).source_vocab
    assert sorted(os.listdir(store_dir.parent)) == ["store"]


def test_compile_refuses_to_replace_a_directory_that_is_no_store(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "lm.arpa").write_text("keep me")
    with pytest.raises(StoreError, match="is not a grammar store"):
        write_store(binarize([make_rule("NN", ["gato"], ["cat"], [])], "left"), tmp_path / "models")
    assert (tmp_path / "models" / "lm.arpa").read_text() == "keep me"


# -- damaged files caught at open ----------------------------------------------------

def drop_last_line(path):
    lines = path.read_bytes().split(b"\n")[:-1]
    path.write_bytes(b"".join(line + b"\n" for line in lines[:-1]))


@pytest.mark.parametrize("name", ["nonterminals.txt", "source_vocab.txt", "target_vocab.txt"])
def test_truncated_text_file(store_dir, name):
    drop_last_line(store_dir / name)
    assert_store_error(store_dir, name, "expected")


@pytest.mark.parametrize("name", ["nonterminals.txt", "source_vocab.txt", "target_vocab.txt"])
def test_truncated_text_file_of_a_store_without_counts(store_dir, name):
    """Stores compiled before meta.json recorded line counts and sizes still open, and a lost
    line is still found: every vocabulary id is used, so the id checks see it."""
    meta = json.loads((store_dir / "meta.json").read_text())
    for key in ("n_source_words", "n_target_words", "text_file_bytes"):
        del meta[key]
    (store_dir / "meta.json").write_text(json.dumps(meta))
    assert len(GrammarStore.open(store_dir)) > 0
    drop_last_line(store_dir / name)
    assert_store_error(store_dir, name)


def test_changed_word_in_a_vocabulary(store_dir):
    path = store_dir / "target_vocab.txt"
    path.write_bytes(path.read_bytes().replace(b"dog", b"do"))
    assert_store_error(store_dir, "target_vocab.txt", "bytes")


@pytest.mark.parametrize("name, value", [("pair_rules", 10**6), ("single_rules", -1), ("rule_lhs", 99),
                                         ("rule_child0", 10**6), ("rule_child1", -2), ("run_words", 50),
                                         ("rule_target", 10**5), ("rule_origin", 7), ("symbol_rule", 10**6),
                                         ("source_top_rule", 100), ("run_hash_runs", 9)])
def test_id_out_of_range(store_dir, name, value):
    path = store_dir / f"{name}.npy"
    ids = np.load(path)
    ids[-1] = value
    np.save(path, ids)
    assert_store_error(store_dir, f"{name}.npy", "outside")


@pytest.mark.parametrize("name", ["rule_target_offsets", "pair_offsets", "tree_offsets"])
def test_offsets_out_of_order(store_dir, name):
    path = store_dir / f"{name}.npy"
    offsets = np.load(path)
    offsets[0] = offsets[-1] + 1
    np.save(path, offsets)
    assert_store_error(store_dir, f"{name}.npy", "offsets")


def test_unsorted_keys(store_dir):
    path = store_dir / "run_hash_keys.npy"
    keys = np.load(path)
    assert len(keys) > 1
    np.save(path, keys[::-1].copy())
    assert_store_error(store_dir, "run_hash_keys.npy", "sorted")
