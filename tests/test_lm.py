"""The compiled KenLM language model against independent answers.

Answers: the pure-Python ARPA reference (decoder.lm.ArpaReference) and, when
importable, the kenlm PyPI module. The models are tiny hand-written ARPA
files with backoffs and <unk>.
"""
import os
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from decoder.lm import ArpaReference, LanguageModel, PyChartState, ReferenceState

# In-vocabulary words plus two out-of-vocabulary ones (scored as <unk>).
WORDS = ["the", "house", "is", "small", "big", "cat", "dog"]
TOLERANCE = 1e-4  # KenLM stores and sums float32


@pytest.fixture(params=["bigram", "trigram"])
def arpa_path(request, toy_arpa):
    return toy_arpa(request.param)


@pytest.fixture
def models(arpa_path):
    return LanguageModel(arpa_path), ArpaReference(arpa_path)


def random_sentences(count, seed, max_length=8):
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(0, max_length))] for _ in range(count)]


# ---- loading and vocabulary ----

def test_loads_arpa(models):
    lm, reference = models
    assert lm.order == reference.order
    assert lm.unk_index == 0
    assert lm.vocab_index("<s>") == lm.bos_index
    assert lm.vocab_index("</s>") == lm.eos_index
    assert lm.vocab_index("cat") == lm.unk_index
    assert str(lm.path).endswith(".arpa")


def test_vocab_indices(models):
    lm, _ = models
    ids = lm.vocab_indices(["the", "house", "cat", "</s>"])
    assert ids.dtype == np.uint32
    assert list(ids) == [lm.vocab_index(w) for w in ["the", "house", "cat", "</s>"]]
    assert ids[2] == 0 and ids[0] != 0 and ids[1] != ids[0]
    assert lm.vocab_indices([]).shape == (0,)
    assert 0 < max(ids) < lm.vocab_size


def test_missing_file_names_path(tmp_path):
    missing = tmp_path / "nowhere" / "model.arpa"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        LanguageModel(missing)


def test_directory_is_rejected(tmp_path):
    with pytest.raises(IsADirectoryError, match=str(tmp_path.name)):
        LanguageModel(tmp_path)


def test_malformed_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.arpa"
    bad.write_text("this is not an ARPA file\n")
    with pytest.raises(ValueError, match="bad.arpa"):
        LanguageModel(bad)


# ---- full sentences ----

@pytest.mark.parametrize("bos,eos", [(True, True), (True, False), (False, True), (False, False)])
def test_sentence_scores_match_reference(models, bos, eos):
    lm, reference = models
    for words in random_sentences(150, seed=1):
        expected = reference.score_sentence(words, bos=bos, eos=eos)
        assert lm.score_sentence(words, bos=bos, eos=eos) == pytest.approx(expected, abs=TOLERANCE)


def test_sentence_scores_match_kenlm_module(models, arpa_path):
    kenlm = pytest.importorskip("kenlm")
    reference_lm = kenlm.Model(str(arpa_path))
    lm, _ = models
    for words in random_sentences(150, seed=2):
        sentence = " ".join(words)
        for bos, eos in [(True, True), (False, False), (True, False)]:
            expected = reference_lm.score(sentence, bos=bos, eos=eos)
            assert lm.score_sentence(sentence, bos=bos, eos=eos) == pytest.approx(expected, abs=TOLERANCE)


def test_hand_computed_trigram_score(toy_arpa):
    path = toy_arpa("trigram")
    lm = LanguageModel(path)
    # <s> the house is small </s>: -0.4 - 0.2 - 0.3 - 0.25, then p(</s> | is small)
    # backs off: bo(is small) + p(</s> | small) = -0.1 - 0.9
    assert lm.score_sentence("the house is small") == pytest.approx(-2.15, abs=TOLERANCE)
    # "cat" is <unk>: p(cat | <s> the) backs off twice: bo(<s> the) + bo(the) + p(<unk>)
    assert lm.score_sentence(["the", "cat"], eos=False) == pytest.approx(-0.4 - 0.2 - 0.4 - 1.5, abs=TOLERANCE)


# ---- chart composition ----

def random_derivation(words, rng):
    """A random rule tree over `words`: a list of words and sub-derivations."""
    items = []
    i = 0
    while i < len(words):
        if rng.random() < 0.4 and len(words) > 1:
            j = rng.randint(i + 1, len(words))
            if (i, j) != (0, len(words)):
                items.append(random_derivation(words[i:j], rng))
                i = j
                continue
        items.append(words[i])
        i += 1
    return items


def score_derivation(model, derivation):
    """Score a derivation bottom-up with model.score_target: (total, root state)."""
    total = 0.0
    items = []
    for item in derivation:
        if isinstance(item, list):
            child_total, child_state = score_derivation(model, item)
            total += child_total
            items.append(child_state)
        else:
            items.append(item)
    score, state = model.score_target(items)
    return total + score, state


@pytest.mark.parametrize("boundaries", ["in_top_rule", "separate_call"])
def test_composition_equals_full_sentence(models, boundaries):
    lm, reference = models
    rng = random.Random(3)
    for words in random_sentences(150, seed=4):
        derivation = random_derivation(words, rng)
        if boundaries == "in_top_rule":
            derivation = ["<s>"] + derivation + ["</s>"]
        for model in (lm, reference):
            total, root = score_derivation(model, derivation)
            if boundaries == "separate_call":
                boundary_score, root = model.score_sentence_boundaries(root)
                total += boundary_score
            expected = model.score_sentence(words)
            assert total == pytest.approx(expected, abs=TOLERANCE), (model, words, derivation)


def test_composition_of_a_fragment_equals_prefix_free_score(models):
    """A fragment later given <s> context: the pieces' sum equals the whole's."""
    lm, reference = models
    rng = random.Random(5)
    for words in random_sentences(100, seed=6):
        for model in (lm, reference):
            pieces_total, state = score_derivation(model, random_derivation(words, rng))
            whole, whole_state = model.score_target(list(words))
            assert pieces_total == pytest.approx(whole, abs=TOLERANCE)
            assert state == whole_state
            if model is lm:
                assert hash(state) == hash(whole_state)


def test_chart_states_recombine_when_boundary_words_agree(models):
    lm, reference = models
    rng = random.Random(7)
    groups = {}
    for words in random_sentences(400, seed=8, max_length=6):
        _, compiled = score_derivation(lm, random_derivation(words, rng))
        _, boundary = reference.score_target(list(words))
        groups.setdefault(boundary, []).append(compiled)
    assert any(len(states) > 1 for states in groups.values())
    for states in groups.values():
        for state in states[1:]:
            assert state == states[0]
            assert hash(state) == hash(states[0])


def test_chart_states_differ_when_context_matters(toy_arpa):
    path = toy_arpa("trigram")
    lm = LanguageModel(path)
    _, the_house = lm.score_target(["the", "house"])
    _, the_big = lm.score_target(["the", "big"])
    _, big_house = lm.score_target(["big", "house"])
    assert the_house != the_big  # different right context: "house is" has a trigram
    assert the_house != big_house  # different left context
    assert isinstance(the_house, PyChartState)
    assert the_house.right_words == tuple(lm.vocab_indices(["the", "house"]))
    assert len({the_house, the_big, big_house}) == 3


def test_reference_state_is_boundary_words(toy_arpa):
    path = toy_arpa("trigram")
    reference = ArpaReference(path)
    assert reference.score_target(["is"])[1] == ReferenceState(("is",))
    _, state = reference.score_target(["the", "big", "house", "is"])
    assert state == ReferenceState(("the", "big"), ("house", "is"))


def test_word_ids_and_strings_score_alike(models):
    lm, _ = models
    words = ["the", "house", "is"]
    by_string = lm.score_target(words)
    by_id = lm.score_target([int(i) for i in lm.vocab_indices(words)])
    assert by_string[0] == by_id[0] and by_string[1] == by_id[1]


def test_queries_are_counted(models):
    lm, _ = models
    before = lm.queries
    lm.score_target(["the", "house", "is"])
    assert lm.queries == before + 3
    lm.score_sentence("the house")
    assert lm.queries == before + 6


# ---- KenLM binary files (need build_binary from models/kenlm/build_tools.sh) ----

def find_build_binary():
    repo = Path(__file__).resolve().parent.parent
    built = repo / "models" / "kenlm" / "build" / "bin" / "build_binary"
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    return shutil.which("build_binary")


@pytest.fixture
def build_binary():
    tool = find_build_binary()
    if tool is None:
        pytest.skip("build_binary not built (bash models/kenlm/build_tools.sh)")
    return tool


def test_probing_binary_scores_like_arpa(models, arpa_path, build_binary, tmp_path):
    lm, _ = models
    binary = tmp_path / "model.probing"
    subprocess.run([build_binary, "probing", str(arpa_path), str(binary)], check=True, capture_output=True)
    from_binary = LanguageModel(binary)
    for words in random_sentences(50, seed=9):
        assert from_binary.score_sentence(words) == lm.score_sentence(words)


def test_trie_binary_is_rejected_clearly(arpa_path, build_binary, tmp_path):
    binary = tmp_path / "model.trie"
    subprocess.run([build_binary, "trie", str(arpa_path), str(binary)], check=True, capture_output=True)
    with pytest.raises(ValueError, match="trie.*probing"):
        LanguageModel(binary)
