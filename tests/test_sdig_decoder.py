"""SdigDecoder: the Decoder interface, and one output per input whatever the input."""
from collections import Counter

import pytest

from decoder.translation import Translation
from decoder.sdig.decoder import SdigDecoder, sdig_decoder_from_paths
from decoder.sdig.deptree import DepTree, read_conllu
from decoder.sdig.grammar import ETPair, Grammar, write_grammar
from decoder.sdig.search import FEATURES

PAIRS = [ETPair("el/2 perro/0", "the/2 dog/0", 3, 0.5, 0.6, "induced"),
         ETPair("perro/0", "dog/0", 3, 0.5, 0.6, "model1"),
         ETPair("el/0", "the/0", 3, 0.5, 0.6, "model1"),
         ETPair("come/0", "eats/0", 3, 0.5, 0.6, "model1")]
TRANSITIONS = Counter({("<root>", "eats"): 2, ("eats", "dog"): 2})
# "el perro come pan" parsed by hand: come <- perro <- el; come <- pan
TREE = DepTree("el perro come pan".split(), [1, 2, -1, 2])


class FixedParser:
    """Stands in for spaCy: a flat-fallback parser with the same statistics keys."""
    def __init__(self, max_tokens=5):
        self.max_tokens = max_tokens
        self.statistics = {"parsed": 0, "empty": 0, "too_long": 0, "roots_joined": 0}

    def parse(self, words):
        from decoder.sdig.deptree import flat_tree
        if len(words) > self.max_tokens:
            self.statistics["too_long"] += 1
            return flat_tree(words)
        self.statistics["parsed"] += 1
        return TREE if words == TREE.words else flat_tree(words)


@pytest.fixture
def decoder():
    return SdigDecoder(Grammar(PAIRS, TRANSITIONS), beam_size=3, parser=FixedParser())


def test_translation_has_the_decoder_fields(decoder):
    t = decoder.translate("el perro come pan")
    assert isinstance(t, Translation)
    # by hand: the two-word ET beats el+perro word ETs (one transition, one ET instead of two);
    # "pan" is unknown and passed through; children of "come" keep their source sides
    assert t.text == "the dog eats pan"
    assert set(t.features) == set(FEATURES) and t.features["oov"] == 1.0
    assert t.score == pytest.approx(sum(decoder.search.weights()[n] * v for n, v in t.features.items()))
    assert t.derivation["target"] == "eats/0"
    assert [c["target"] for c in t.derivation["children"]] == ["the/2 dog/0", "pan/0"]
    output = t.tree.splitlines()
    assert [line.split("\t")[6] for line in output] == ["2", "3", "0", "3"]


def test_bad_input_gives_one_output_each(decoder):
    sentences = ["el perro come pan", "", "el perro come pan y mas y mas", "zzz"]
    results = decoder.translate_batch(sentences)
    assert [r.text for r in results] == ["the dog eats pan", "", "the dog eats pan y mas y mas", "zzz"]
    assert results[2].stats["fallback"] == "too_long"
    # a tree that lost a token (as a parser dropping one would): the flat fallback over our tokens
    t = decoder.translate("el perro come pan", tree=DepTree("el perro come".split(), [1, 2, -1]))
    assert t.stats["fallback"] == "tree_mismatch" and len(t.text.split()) == 4


def test_kbest_is_sorted_and_unique(decoder):
    # two derivations, one text: the ET pair "el perro" = "the dog", or the two word ETs
    every = decoder.kbest("el perro come pan", 5, unique=False)
    assert [t.text for t in every] == ["the dog eats pan"] * 2
    assert every[0].score > every[1].score
    assert every[1].features["model1_et"] == 3.0
    assert [t.text for t in decoder.kbest("el perro come pan", 5)] == ["the dog eats pan"]


def test_from_paths_round_trip(tmp_path):
    write_grammar(tmp_path / "g", PAIRS, TRANSITIONS, {})
    (tmp_path / "w.toml").write_text("[weights]\ntm_ef = 0.5\ntransition = 0.25\n")
    d = sdig_decoder_from_paths(tmp_path / "g", weights=tmp_path / "w.toml", parser=FixedParser())
    assert d.search.weights()["tm_ef"] == 0.5 and d.search.weights()["tm_fe"] == 1.0
    assert d.translate("el perro come pan").text == "the dog eats pan"
    with pytest.raises(ValueError, match="unknown SDIG feature"):
        SdigDecoder(tmp_path / "g", weights={"tm": 1.0})


def test_order_model_moves_a_child_to_the_other_side():
    # Spanish "casa blanca" (amod on the right) -> English adjective on the left, learned from counts
    pairs = [ETPair("casa/0", "house/0", 1, 0.9, 0.9, "induced"), ETPair("blanca/0", "white/0", 1, 0.9, 0.9, "induced"),
             ETPair("la/0", "the/0", 1, 0.9, 0.9, "induced")]
    tree = DepTree("la casa blanca".split(), [1, -1, 1], relations=["det", "root", "amod"])
    orders = {("amod", "R"): Counter(L=9, R=1), ("det", "L"): Counter(L=9)}
    grammar = Grammar(pairs, Counter(), orders=orders)
    assert SdigDecoder(grammar, parser=FixedParser()).translate("la casa blanca", tree=tree).text == "the house white"
    reordered = SdigDecoder(grammar, reorder=True, parser=FixedParser()).translate("la casa blanca", tree=tree)
    assert reordered.text == "the white house"
    assert [line.split("\t")[6] for line in reordered.tree.splitlines()] == ["3", "3", "0"]
