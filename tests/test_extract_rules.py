"""GHKM minimal and composed rules on hand-worked examples (expected sets written out by hand)."""
import pytest

from decoder.extract.alignment import AlignmentGraph, parse_alignment
from decoder.extract.rules import Limits, extract_rules
from decoder.extract.trees import parse_tree
from decoder.grammar import format_rule, parse_rule

GHKM_TREE = "(S (NP (PRP he)) (VP (AUX does) (RB not) (VB go)))"
GHKM_SOURCE = "il ne va pas"
GHKM_ALIGNMENT = "0-0 1-2 2-3 3-2"  # il-he ne-not va-go pas-not


def graph(tree: str, source: str, alignment: str) -> AlignmentGraph:
    t = parse_tree(tree)
    words = source.split()
    return AlignmentGraph(t, words, parse_alignment(alignment, len(words), len(t.word_node)))


def rules(tree, source, alignment, **limits):
    return extract_rules(graph(tree, source, alignment), Limits(**limits))


def notation(rule_list):
    return sorted(str(r) for r in rule_list)


def test_ghkm_frontier_nodes():
    g = graph(GHKM_TREE, GHKM_SOURCE, GHKM_ALIGNMENT)
    assert [g.tree.label[n] for n in g.frontier_nodes()] == ["S", "NP", "PRP", "VP", "VB"]


def test_ghkm_worked_example_has_exactly_its_five_minimal_rules():
    found = rules(GHKM_TREE, GHKM_SOURCE, GHKM_ALIGNMENT, compose=1)
    assert notation(found) == sorted([
        "PRP(he) <- il",
        "NP(x0:PRP) <- x0",
        "S(x0:NP x1:VP) <- x0 x1",
        "VB(go) <- va",
        "VP(AUX(does) RB(not) x0:VB) <- ne x0 pas",  # the unaligned "does" is inside the VP rule
    ])
    vp = next(r for r in found if r.lhs == "VP")
    assert vp.source == ("ne", 0, "pas")
    assert vp.target == ("does", "not", 0)
    assert vp.labels == ("VB",)
    assert vp.alignment == ((0, 1), (2, 1))  # ne-not, pas-not
    assert vp.tree == "[VP [AUX does] [RB not] [VB]]"
    assert all(r.size == 1 for r in found)


def test_unaligned_source_word_inside_goes_to_the_lowest_frontier_node_covering_it():
    # "si" (position 2) is unaligned; the lowest frontier node whose closure holds it is S.
    found = rules("(S (NP (DT the) (NN dog)) (VP (VB runs)))", "el perro si corre", "0-0 1-1 3-2", compose=1)
    assert notation(found) == sorted([
        "S(x0:NP x1:VP) <- x0 si x1",
        "NP(x0:DT x1:NN) <- x0 x1",
        "DT(the) <- el",
        "NN(dog) <- perro",
        "VP(x0:VB) <- x0",
        "VB(runs) <- corre",
    ])


def test_unaligned_source_words_at_the_sentence_edges_go_to_the_root_rule():
    found = rules("(S (NP (NN dog)) (VP (VB runs)))", "pues perro corre ya", "1-0 2-1", compose=1)
    assert notation(found) == sorted([
        "S(x0:NP x1:VP) <- pues x0 x1 ya",
        "NP(x0:NN) <- x0",
        "NN(dog) <- perro",
        "VP(x0:VB) <- x0",
        "VB(runs) <- corre",
    ])


def test_unaligned_source_word_between_two_words_of_one_preterminal_joins_its_rule():
    # ne ... pas both align to "not" and "va" is unaligned: RB covers the whole closure.
    found = rules("(S (NP (PRP he)) (VP (RB not)))", "il ne va pas", "0-0 1-1 3-1", compose=1)
    assert "RB(not) <- ne va pas" in notation(found)


def test_unaligned_target_word_stays_inside_its_fragment():
    # Spanish drops the subject: "it" is unaligned, so NP and PRP are not frontier nodes.
    found = rules("(S (NP (PRP it)) (VP (VBZ is) (ADJP (JJ red))))", "es rojo", "0-1 1-2", compose=1)
    assert notation(found) == sorted([
        "S(NP(PRP(it)) x0:VP) <- x0",
        "VP(x0:VBZ x1:ADJP) <- x0 x1",
        "VBZ(is) <- es",
        "ADJP(x0:JJ) <- x0",
        "JJ(red) <- rojo",
    ])
    s = next(r for r in found if r.lhs == "S")
    assert s.target == ("it", 0) and s.source == (0,) and s.alignment == ()


def test_reordering_numbers_slots_in_source_order():
    found = rules("(NP (DT the) (JJ red) (NN car))", "el coche rojo", "0-0 1-2 2-1", compose=1)
    assert notation(found) == sorted([
        "NP(x0:DT x2:JJ x1:NN) <- x0 x1 x2",
        "DT(the) <- el",
        "JJ(red) <- rojo",
        "NN(car) <- coche",
    ])
    np = next(r for r in found if r.lhs == "NP")
    assert np.labels == ("DT", "NN", "JJ")
    assert np.target == (0, 2, 1)
    assert np.to_rule().permutation == (0, 2, 1)


def test_a_word_aligned_across_a_constituent_blocks_the_frontier():
    # "rojo" aligns to both "red" and "car": JJ and NN overlap, so only NP and DT are frontier nodes.
    found = rules("(NP (DT the) (JJ red) (NN car))", "el coche rojo", "0-0 1-2 2-1 2-2", compose=1)
    assert notation(found) == sorted([
        "NP(x0:DT JJ(red) NN(car)) <- x0 coche rojo",
        "DT(the) <- el",
    ])


def test_composed_rules_of_two_minimal_rules():
    found = rules(GHKM_TREE, GHKM_SOURCE, GHKM_ALIGNMENT, compose=2)
    composed = [r for r in found if r.size == 2]
    assert notation(composed) == sorted([
        "VP(AUX(does) RB(not) VB(go)) <- ne va pas",  # VP rule + VB rule
        "NP(PRP(he)) <- il",  # NP rule + PRP rule
        "S(NP(x0:PRP) x1:VP) <- x0 x1",  # S rule + NP rule
        "S(x0:NP VP(AUX(does) RB(not) x1:VB)) <- x0 ne x1 pas",  # S rule + VP rule
    ])
    assert len(found) == 5 + 4


def test_composed_rules_of_three_minimal_rules():
    found = rules(GHKM_TREE, GHKM_SOURCE, GHKM_ALIGNMENT)  # defaults: compose 3, depth 3
    assert notation([r for r in found if r.size == 3]) == sorted([
        "S(NP(PRP(he)) x0:VP) <- il x0",
        "S(x0:NP VP(AUX(does) RB(not) VB(go))) <- x0 ne va pas",
        "S(NP(x0:PRP) VP(AUX(does) RB(not) x1:VB)) <- x0 ne x1 pas",
    ])


def test_depth_bound_uses_moses_depth():
    found = rules(GHKM_TREE, GHKM_SOURCE, GHKM_ALIGNMENT, compose=2, max_depth=1)
    assert notation([r for r in found if r.size > 1]) == sorted([
        "VP(AUX(does) RB(not) VB(go)) <- ne va pas",
        "NP(PRP(he)) <- il",
    ])


def test_symbol_bound_applies_to_composed_rules_only():
    found = rules(GHKM_TREE, GHKM_SOURCE, GHKM_ALIGNMENT, compose=2, max_symbols=2)
    assert notation([r for r in found if r.size > 1]) == sorted([
        "NP(PRP(he)) <- il",
        "S(NP(x0:PRP) x1:VP) <- x0 x1",
    ])
    assert "VP(AUX(does) RB(not) x0:VB) <- ne x0 pas" in notation(found)  # minimal, 3 symbols


def test_nonterminal_bound():
    tree = "(S (A a) (B b) (C c))"
    found = rules(tree, "x y z", "0-0 1-1 2-2", compose=2, max_nonterminals=2)
    assert notation(found) == sorted([
        "S(x0:A x1:B x2:C) <- x0 x1 x2",  # minimal: kept whatever its size
        "A(a) <- x", "B(b) <- y", "C(c) <- z",
        "S(A(a) x0:B x1:C) <- x x0 x1",
        "S(x0:A B(b) x1:C) <- x0 y x1",
        "S(x0:A x1:B C(c)) <- x0 x1 z",
    ])


def test_tree_fragment_is_kept_in_the_moses_line():
    vp = next(r for r in rules(GHKM_TREE, GHKM_SOURCE, GHKM_ALIGNMENT, compose=1) if r.lhs == "VP")
    line = format_rule(vp.to_rule(scores=(0.5, 1.0)))
    assert line.startswith("ne [X][VB] pas [X] ||| does not [X][VB] [VP] ||| 0.5 1 ||| 0-1 1-2 2-1")
    assert line.endswith("{{Tree [VP [AUX does] [RB not] [VB]]}}")
    back = parse_rule(line)
    assert back == vp.to_rule(scores=(0.5, 1.0))
    assert back.tree == vp.tree


def test_no_alignment_gives_no_rules():
    assert rules(GHKM_TREE, GHKM_SOURCE, "") == []


@pytest.mark.parametrize("text", ["(S (NP", "(S (NP he)))", "S NP he", "()", "", "(S) (T x)", "(S (NP he)) x"])
def test_unparsable_trees_raise(text):
    from decoder.extract.trees import TreeFormatError

    with pytest.raises(TreeFormatError):
        parse_tree(text)


def test_tree_reading_drops_a_nameless_outer_bracket_and_escapes_words():
    t = parse_tree("( (S (NP (NN a|b)) (VP (VB [x]))) )")
    assert t.label[0] == "S"
    assert t.words == ["a&#124;b", "&#91;x&#93;"]
    assert t.bracketed() == "(S (NP (NN a&#124;b)) (VP (VB &#91;x&#93;)))"


def test_repeated_alignment_points_count_once():
    assert parse_alignment("0-1 2-0 0-1", 3, 2) == [(0, 1), (2, 0)]


@pytest.mark.parametrize("text", ["0-5", "4-0", "0:1", "a-b", "0-"])
def test_bad_alignment_points_raise(text):
    from decoder.extract.alignment import AlignmentFormatError

    with pytest.raises(AlignmentFormatError):
        parse_alignment(text, 4, 4)


def test_minimal_rules_form_one_derivation_of_each_pair(tmp_path):
    """Every source word and every target word is in exactly one minimal rule, and every
    frontier node but the root is a slot exactly once (so the rules make one derivation)."""
    from decoder.extract.corpus import CorpusPaths, pair_graph, read_corpus
    from decoder.extract.synthetic import write_corpus

    paths = write_corpus(str(tmp_path), 80, seed=2)
    corpus = CorpusPaths(paths["es"], paths["trees"], paths["align"])
    checked = 0
    for pair in read_corpus(corpus):
        if not pair.source.strip():
            continue
        g = pair_graph(pair, corpus)
        minimal = extract_rules(g, Limits(compose=1))
        if not minimal:
            continue
        assert sorted(w for r in minimal for w in r.source_terminals()) == sorted(g.source_words)
        assert sorted(w for r in minimal for w in r.target_terminals()) == sorted(g.tree.words)
        assert sum(r.n_nonterminals for r in minimal) == len(minimal) - 1
        assert len(minimal) == len(g.frontier_nodes())
        checked += 1
    assert checked > 60
