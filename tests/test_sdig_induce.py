"""Grammar induction: the partition found by hand equals the induced ETs."""
import numpy as np
import pytest

from decoder.sdig.deptree import DepTree
from decoder.sdig.heuristics import FEATURES, PairContext, train_maxent, training_examples
from decoder.sdig.induce import ROOT, InductionCounts, induce, partition
from decoder.sdig.model1 import Model1, train_model1


def consistency_scorer(links):
    """An alignment oracle: 0 for unlinked pairs; for linked ones 0.5 + half the share of the
    links touching the two subtrees that the cut keeps together."""
    def score(context, pairs, e_piece, f_piece):
        out = []
        for i, j in pairs:
            if (j, i) not in links:
                out.append(0.0)
                continue
            e_in, f_in = context.e_sub[i] & e_piece, context.f_sub[j] & f_piece
            touching = [(f, e) for f, e in links if e_in[e] or f_in[f]]
            kept = sum(1 for f, e in touching if e_in[e] and f_in[f])
            out.append(0.5 + 0.5 * kept / len(touching))
        return np.array(out)
    return score


EMPTY = Model1({})


def induced(e_tree, f_tree, links):
    context = PairContext(e_tree, f_tree, EMPTY, EMPTY)
    counts = InductionCounts()
    counts.add(context, partition(context, consistency_scorer(links)), max_source_words=10)
    return counts


def test_pseudo_translation_example():
    # Ding and Palmer (2005), figures 1-2: "the girl kissed her kitty cat" and its pseudo-translation
    # "the girl gave a kiss to her cat"; ETs by hand: kissed = gave a kiss to, kitty cat = cat.
    f = DepTree("the girl kissed her kitty cat".split(), [1, 2, -1, 5, 5, 2],
                categories=["O", "NP", "VP", "O", "NP", "NP"])
    e = DepTree("the girl gave a kiss to her cat".split(), [1, 2, -1, 4, 2, 2, 7, 5],
                categories=["O", "NP", "VP", "O", "NP", "PP", "O", "NP"])
    links = {(0, 0), (1, 1), (2, 2), (2, 4), (2, 5), (3, 6), (4, 7), (5, 7)}   # (f, e)
    counts = induced(e, f, links)
    by_hand = {
        # after the NP level
        ("kissed/0", "gave/0 a/3 kiss/1 to/1"),
        ("the/2 girl/0", "the/2 girl/0"),
        ("her/3 kitty/3 cat/0", "her/2 cat/0"),
        # after the last level (O): the determiners and possessives are cut off too
        ("the/0", "the/0"), ("girl/0", "girl/0"), ("her/0", "her/0"), ("kitty/2 cat/0", "cat/0"),
    }
    assert set(counts.pairs) == by_hand
    assert all(c == 1 for c in counts.pairs.values())
    assert counts.splits_per_level == [2, 0, 0, 2]
    # root words of the final partition on the English side: gave <- girl, to... cat hangs off "to",
    # which is in gave's ET
    assert counts.transitions == {(ROOT, "gave"): 1, ("gave", "girl"): 1, ("girl", "the"): 1,
                                  ("gave", "cat"): 1, ("cat", "her"): 1}


def test_crossing_and_broken_dependencies():
    # crossing: English "in" heads "park", Spanish "parque" heads "en" (parent-child switch);
    # broken: Spanish "no ... nada" both hang off the verb, English "nothing" alone is aligned to both.
    e = DepTree("he sees nothing in the park".split(), [1, -1, 1, 1, 5, 3],
                categories=["NP", "VP", "NP", "PP", "O", "NP"])
    f = DepTree("no ve nada en el parque".split(), [1, -1, 1, 5, 5, 1],
                categories=["ADVP", "VP", "NP", "PP", "O", "NP"])
    links = {(0, 2), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)}
    counts = induced(e, f, links)
    # by hand: NP level cuts park=parque first (consistency 2/3), then nothing=nada (1/2: the link
    # from "no" stays outside); parque's Spanish subtree holds "en": the crossing
    # goes inside the ET pair "the park" = "en el parque"; "he" has no partner.
    # O level: the=el inside that pair.
    by_hand = {
        ("no/2 ve/0", "he/2 sees/0 in/2"),
        ("nada/0", "nothing/0"),
        ("en/3 el/3 parque/0", "the/2 park/0"),
        ("en/2 parque/0", "park/0"),
        ("el/0", "the/0"),
    }
    assert set(counts.pairs) == by_hand


def test_model1_prefers_the_consistent_translation():
    model = train_model1([["das", "haus"], ["das", "buch"], ["ein", "buch"]],
                         [["the", "house"], ["the", "book"], ["a", "book"]], iterations=10)
    assert max(["the", "house", "book"], key=lambda e: model.prob("das", e)) == "the"
    assert max(["a", "book"], key=lambda e: model.prob("buch", e)) == "book"
    total = sum(model.table["das"].values())
    assert abs(total - 1.0) < 1e-6


def test_maxent_scorer_learns_from_alignments():
    # identical trees, identity alignment: the max-ent model must rank linked pairs first
    words = "a b c d e".split()
    tree = DepTree(words, [1, -1, 1, 4, 1], categories=["NP"] * 5)
    t = train_model1([words] * 3, [words] * 3)
    contexts = [PairContext(tree, tree, t, t)]
    links = [{(k, k) for k in range(5)}]
    X, y = training_examples(contexts, links)
    assert X.shape == (16, len(FEATURES)) and y.sum() == 4
    scorer = train_maxent(X, y)
    p = scorer.probability(X)
    assert p[y == 1].min() > p[y == 0].max()


def test_vectorized_heuristics_equal_their_definitions():
    import math
    import random

    rng = random.Random(3)
    e = DepTree("a b c d e f".split(), [1, -1, 1, 2, 3, 1])
    f = DepTree("u v w x y".split(), [-1, 0, 1, 1, 0])
    t_ef = Model1({fw: {ew: rng.random() for ew in e.words} for fw in f.words})
    t_fe = Model1({ew: {fw: rng.random() for fw in f.words} for ew in e.words})
    context = PairContext(e, f, t_ef, t_fe)
    e_piece = np.array([1, 1, 1, 1, 0, 1], bool)
    f_piece = np.array([1, 1, 1, 0, 1], bool)

    def subtree(tree, n, piece):
        return [m for m in tree.subtree(n) if piece[m]]

    def coverage(es, fs):
        if not es or not fs:
            return 0.0
        return sum(max(t_ef.prob(f.words[b], e.words[a]) for b in fs) for a in es) / len(es)

    pairs = [(i, j) for i in (0, 2, 3, 5) for j in (1, 2, 4)]
    got = context.feature_matrix(pairs, e_piece, f_piece)
    for row, (i, j) in zip(got, pairs):
        e_in, f_in = subtree(e, i, e_piece), subtree(f, j, f_piece)
        e_out = [a for a in range(6) if e_piece[a] and a not in e_in]
        f_out = [b for b in range(5) if f_piece[b] and b not in f_in]
        expected = [math.log(t_ef.prob(f.words[j], e.words[i])), math.log(t_fe.prob(e.words[i], f.words[j])),
                    coverage(e_in, f_in), coverage(e_out, f_out), abs(i / 6 - j / 5),
                    abs(math.log(len(e_in) / len(f_in))), 1 / 4]
        assert row.tolist() == pytest.approx(expected)


def test_implausible_piece_pairs_are_not_collected():
    from decoder.sdig.grammar import plausible_sizes

    assert plausible_sizes(1, 4) and not plausible_sizes(1, 5) and not plausible_sizes(8, 8)
    # a root piece left with "." on one side and a whole clause on the other is dropped
    f = DepTree("ve .".split(), [-1, 0], categories=["VP", "O"])
    e = DepTree("and he saw all that was there .".split(), [2, 2, -1, 2, 2, 4, 5, 2],
                categories=["O", "NP", "VP", "NP", "O", "VP", "ADVP", "O"])
    counts = induced(e, f, {(0, 2), (1, 7)})
    assert ("ve/0 ./1", "and/3 he/3 saw/0 all/3 that/3 was/5 there/6 ./3") not in counts.pairs
    assert ("./0", "./0") in counts.pairs
