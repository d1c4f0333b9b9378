"""The SDIG dynamic program against brute-force enumeration of every ET decomposition and
every choice of ET translations, on tiny random grammars: both the pure-Python reference
(Search.search_reference) and the compiled search (Search.search, decoder._ext._sdig), and
the compiled search against the reference hypothesis by hypothesis."""
import itertools
import math
import random
from collections import Counter

import pytest

from decoder.sdig.deptree import DepTree
from decoder.sdig.elementary import et_key
from decoder.sdig.grammar import INDUCED, MODEL1, ETPair, Grammar
from decoder.sdig.search import FEATURES, ROOT, Search
from search_fixtures import TARGET_WORDS, write_arpa

SOURCE = ("a", "b", "c", "d")


def random_tree(rng, n):
    heads = [-1] + [rng.randrange(i) for i in range(1, n)]
    order = list(range(n))
    rng.shuffle(order)   # positions: a random permutation, so heads point left and right
    position = {node: p for p, node in enumerate(order)}
    words, tree_heads = [None] * n, [None] * n
    for node in range(n):
        words[position[node]] = rng.choice(SOURCE)
        tree_heads[position[node]] = -1 if heads[node] == -1 else position[heads[node]]
    return DepTree(words, tree_heads)


def connected_sets(tree, top, max_size):
    """Brute force: every subset of top's subtree that holds top and is closed under heads."""
    sub = tree.subtree(top)
    others = [n for n in sub if n != top]
    for size in range(0, max_size):
        for rest in itertools.combinations(others, size):
            nodes = {top, *rest}
            if all(tree.heads[n] in nodes for n in rest):
                yield tuple(sorted(nodes))


def random_grammar(rng, tree, max_size=3):
    pairs = {}
    for top in range(len(tree)):
        for nodes in connected_sets(tree, top, max_size):
            if rng.random() < 0.5:
                source = et_key(tree, nodes)
                for _ in range(rng.randint(1, 2)):
                    m = rng.randint(1, 3)
                    words = [rng.choice(TARGET_WORDS) for _ in range(m)]
                    root = rng.randrange(m)
                    heads = [0 if i == root else root + 1 for i in range(m)]
                    target = " ".join(f"{w}/{h}" for w, h in zip(words, heads))
                    kind = MODEL1 if len(nodes) == 1 and rng.random() < 0.5 else INDUCED
                    pairs[source, target] = ETPair(source, target, 1, rng.uniform(0.05, 1), rng.uniform(0.05, 1), kind)
    transitions = Counter({(rng.choice((ROOT,) + TARGET_WORDS), rng.choice(TARGET_WORDS)): rng.randint(1, 5)
                           for _ in range(10)})
    return Grammar(list(pairs.values()), transitions, max_source_words=max_size)


def derivations(tree, grammar, top):
    """Every (ET nodes, pair, children derivations) rooted at `top`."""
    for nodes in connected_sets(tree, top, grammar.max_source_words):
        pairs = grammar.by_source.get(et_key(tree, nodes))
        if not pairs:
            if len(nodes) > 1 or grammar.by_source.get(f"{tree.words[top]}/0"):
                continue   # only an unknown single word is passed through
            pairs = [None]
        attached = sorted(c for c in range(len(tree)) if tree.heads[c] in nodes and c not in nodes)
        for pair in pairs:
            for children in itertools.product(*[list(derivations(tree, grammar, c)) for c in attached]):
                yield nodes, pair, list(zip(attached, children)), top


def target_of(tree, pair, top):
    if pair is None:
        return [tree.words[top]], 0
    items = [item.rsplit("/", 1) for item in pair.target.split(" ")]
    return [w for w, _ in items], [int(h) for _, h in items].index(0)


def evaluate(tree, grammar, derivation, parent_root):
    """(features by name, output words), computed from the definitions in decoder.sdig.search."""
    nodes, pair, children, top = derivation
    words, root = target_of(tree, pair, top)
    features = Counter()
    if pair is None:
        features["oov"] += 1
        features["word_count"] += 1
    else:
        features["tm_fe"] += math.log(pair.p_source_given_target)
        features["tm_ef"] += math.log(pair.p_target_given_source)
        features["model1_et"] += pair.kind == MODEL1
        features["word_count"] += len(words)
    features["et_count"] += 1
    features["transition"] += grammar.transitions.logprob(parent_root, words[root])
    left, right = [], []
    for position, child in children:
        child_features, child_words = evaluate(tree, grammar, child, words[root])
        features.update(child_features)
        (left if position < top else right).extend(child_words)
    return features, left + words + right


def run(search, method, tree, k=None):
    return getattr(search, method)(tree, k=k)


@pytest.mark.parametrize("method", ["search", "search_reference"])
@pytest.mark.parametrize("seed", range(40))
def test_dynamic_program_equals_brute_force(seed, method):
    rng = random.Random(seed)
    tree = random_tree(rng, rng.randint(1, 6))
    grammar = random_grammar(rng, tree)
    weights = {name: rng.uniform(-1, 1) for name in FEATURES if name != "lm"}
    scored = []
    for d in derivations(tree, grammar, tree.root):
        features, words = evaluate(tree, grammar, d, ROOT)
        scored.append((sum(weights[n] * features[n] for n in weights), words))
    scored.sort(key=lambda item: -item[0])
    search = Search(grammar, weights, beam_size=1)
    (best,), _ = run(search, method, tree)
    assert best.score == pytest.approx(scored[0][0])
    if len(scored) == 1 or scored[1][0] < scored[0][0] - 1e-9:
        assert list(best.words) == scored[0][1]
    k = min(5, len(scored))
    kbest, _ = run(Search(grammar, weights, beam_size=k), method, tree, k=k)
    assert [h.score for h in kbest] == pytest.approx([s for s, _ in scored[:k]])


@pytest.mark.parametrize("method", ["search", "search_reference"])
@pytest.mark.parametrize("seed", range(15))
def test_lm_search_with_a_wide_beam_equals_brute_force(seed, method, tmp_path):
    from decoder.lm import LanguageModel

    lm = LanguageModel(write_arpa(tmp_path))
    rng = random.Random(100 + seed)
    tree = random_tree(rng, rng.randint(2, 5))
    grammar = random_grammar(rng, tree)
    weights = {name: rng.uniform(-1, 1) for name in FEATURES if name != "lm"}
    weights["lm"] = 1.0
    scored = []
    for d in derivations(tree, grammar, tree.root):
        features, words = evaluate(tree, grammar, d, ROOT)
        features["lm"] = lm.score_sentence(words)
        scored.append((sum(weights[n] * features[n] for n in weights), words))
    scored.sort(key=lambda item: -item[0])
    (best,), _ = run(Search(grammar, weights, lm=lm, beam_size=10 ** 6), method, tree)
    assert best.score == pytest.approx(scored[0][0], abs=1e-4)
    assert best.features[FEATURES.index("lm")] == pytest.approx(lm.score_sentence(list(best.words)), abs=1e-4)


def test_side_codes_are_the_compiled_enum():
    from decoder._ext._sdig import SdigSide
    from decoder.sdig.search import SIDE_CODES

    assert SIDE_CODES == {"L": SdigSide.SIDE_LEFT, "l": SdigSide.SIDE_MOVED_LEFT,
                          "r": SdigSide.SIDE_MOVED_RIGHT, "R": SdigSide.SIDE_RIGHT}


def assert_same_hypotheses(compiled, reference):
    """The compiled search's list equals the reference's: same scores, features, words, heads
    and derivations, in the same order (both sort stably and sum in the same order)."""
    assert len(compiled) == len(reference)
    for c, r in zip(compiled, reference):
        assert c.score == pytest.approx(r.score, abs=1e-9)
        assert c.features == pytest.approx(r.features, abs=1e-9)
        assert (c.words, c.heads, c.derivation) == (r.words, r.heads, r.derivation)


@pytest.mark.parametrize("seed", range(30))
def test_compiled_search_equals_the_reference_with_narrow_beams(seed, tmp_path):
    """Beams narrow enough to prune (where a different candidate order would show), with and
    without an LM, with and without the order model."""
    from decoder.lm import LanguageModel

    rng = random.Random(500 + seed)
    tree = random_tree(rng, rng.randint(3, 8))
    tree.relations = [rng.choice(("nsubj", "obj", "det")) for _ in tree.words]
    grammar = random_grammar(rng, tree)
    grammar.swapped = {("obj", "R"), ("det", "L")}
    weights = {name: rng.uniform(-1, 1) for name in FEATURES}
    lm = LanguageModel(write_arpa(tmp_path)) if seed % 2 else None
    beam, k = rng.randint(1, 4), rng.randint(1, 6)
    reorder = seed % 3 == 0
    compiled, c_stats = Search(grammar, weights, lm=lm, beam_size=beam, reorder=reorder).search(tree, k=k)
    reference, r_stats = Search(grammar, weights, lm=lm, beam_size=beam, reorder=reorder).search_reference(tree, k=k)
    assert_same_hypotheses(compiled, reference)
    assert c_stats == r_stats


def test_table_limit_keeps_the_likeliest_english_sides():
    pairs = [ETPair("a/0", f"x{i}/0", 1, 0.5, p, INDUCED) for i, p in enumerate([0.1, 0.3, 0.2, 0.3, 0.05])]
    kept = Grammar(pairs, Counter(), table_limit=3).by_source["a/0"]
    # by hand: P(e|f) 0.3 (x1, first in the file), 0.3 (x3), 0.2 (x2)
    assert [p.target for p in kept] == ["x1/0", "x3/0", "x2/0"]
    assert len(Grammar(pairs, Counter(), table_limit=0).by_source["a/0"]) == 5
