"""KenLM rest costs (Heafield, Koehn and Lavie 2012): a rest_probing binary built here from the
search tests' toy trigram and hand-written unigram and bigram models (`build_binary -r`), against
the probing model of the same trigram and an independent reference of the rest-cost estimate.

What must hold: complete sentences score the same; only the estimates of words whose left context
is unknown change (to the lower-order model's probability, where KenLM lets the word extend left);
composing chart items corrects those estimates exactly; searches over the rest model find the
brute-force optimum.
"""
import math
import random
import subprocess

import pytest

from conftest import TOY_ARPA
from decoder.binarize import binarize
from decoder.lm import ArpaReference, LanguageModel
from decoder.search.brute_force import best_by_brute_force
from decoder.search.driver import ChartSearchDriver as ChartDecoder
from decoder.search.incremental import IncrementalSearchDriver as IncrementalDecoder
from decoder.search.two_pass import TwoPassSearchDriver
from decoder.search.model import SearchSpace, Weights
from decoder.store import GrammarStore, write_store

from search_fixtures import FEATURES, WEIGHTS, random_rules, random_sentence, write_arpa
from test_lm import find_build_binary

TOP = TOY_ARPA["search"]  # the trigram of the search tests: <s> </s> <unk> x y z w
WORDS = ["x", "y", "z", "w"]

# The lower-order rest models: the same unigrams in the same order (KenLM's probing rest build
# needs that), other probabilities than the trigram's lower orders.
UNIGRAM = """\
\\data\\
ngram 1=7

\\1-grams:
-99\t<s>
-1.4\t</s>
-2.5\t<unk>
-0.6\tx
-1.2\ty
-0.7\tz
-1.9\tw

\\end\\
"""

# No "x z" (a bigram of the trigram model that "<s> x z" extends to the left): its rest is
# backoff(x) + p(z) in this model.
BIGRAM = """\
\\data\\
ngram 1=7
ngram 2=6

\\1-grams:
-99\t<s>\t-0.3
-1.3\t</s>
-2.2\t<unk>
-0.7\tx\t-0.45
-1.0\ty\t-0.35
-0.9\tz\t-0.15
-1.5\tw\t-0.5

\\2-grams:
-0.2\t<s> x
-0.25\tx y
-0.8\ty z
-0.3\tw </s>
-0.75\tz </s>
-0.65\ty x

\\end\\
"""


@pytest.fixture(scope="module")
def rest_models(tmp_path_factory):
    """(probing LanguageModel, rest_probing LanguageModel, ArpaReference of the trigram, of each lower order)."""
    build_binary = find_build_binary()
    if build_binary is None:
        pytest.skip("build_binary not built (bash models/kenlm/build_tools.sh)")
    directory = tmp_path_factory.mktemp("rest-lm")
    top = write_arpa(directory)
    (directory / "order1.arpa").write_text(UNIGRAM)
    (directory / "order2.arpa").write_text(BIGRAM)
    rest = directory / "rest.bin"
    subprocess.run([build_binary, "-r", f"{directory / 'order1.arpa'} {directory / 'order2.arpa'}",
                    "probing", top, str(rest)], check=True, capture_output=True)
    lower = {1: ArpaReference(str(directory / "order1.arpa")), 2: ArpaReference(str(directory / "order2.arpa"))}
    return LanguageModel(top), LanguageModel(rest), ArpaReference(top), lower


def rest_estimate(top: ArpaReference, lower, words) -> float:
    """KenLM's score of words with unknown left context on a rest model, from the ARPA files: word i
    (1-based) whose n-gram w1..wi is in the model, shorter than its order and extended to the left by
    some n-gram of the model costs its probability in the i-gram model; the first word that is not
    such (and every word after it, or after an n-gram that nothing extends to the right) costs its
    probability given the words before it."""
    total, done = 0.0, False
    ngrams = top.logprobs
    for i in range(1, len(words) + 1):
        ngram = tuple(words[:i])
        extends_left = any(len(g) == i + 1 and g[1:] == ngram for g in ngrams)
        if not done and i < top.order and ngram in ngrams and extends_left:
            total += lower[i].logprob(list(ngram[:-1]), ngram[-1])
            done = not any(len(g) == i + 1 and g[:-1] == ngram for g in ngrams)
        else:
            total += top.logprob(words[: i - 1], words[i - 1])
            done = True
    return total


def random_word_lists(count, seed, max_length=7):
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(1, max_length))] for _ in range(count)]


def test_rest_binary_loads_with_the_same_vocabulary(rest_models):
    probing, rest, _, _ = rest_models
    assert (probing.kind, rest.kind) == ("probing", "rest_probing")
    assert rest.order == probing.order == 3
    vocabulary = ["<s>", "</s>", "<unk>", "x", "y", "z", "w", "q"]
    assert list(rest.vocab_indices(vocabulary)) == list(probing.vocab_indices(vocabulary))
    assert rest.vocab_size == probing.vocab_size
    assert "rest_probing" in repr(rest)


def test_complete_sentences_score_the_same(rest_models):
    probing, rest, top, _ = rest_models
    for words in random_word_lists(200, seed=1) + [[], ["q", "x"]]:
        assert rest.score_sentence(words) == probing.score_sentence(words)
        assert rest.score_sentence(words, eos=False) == probing.score_sentence(words, eos=False)
        assert rest.score_sentence(words) == pytest.approx(top.score_sentence(words), abs=1e-4)


def test_estimates_are_the_lower_order_models_probabilities(rest_models):
    probing, rest, top, lower = rest_models
    changed = 0
    for words in random_word_lists(300, seed=2):
        expected = rest_estimate(top, lower, words)
        assert rest.score_sentence(words, bos=False, eos=False) == pytest.approx(expected, abs=1e-4), words
        assert rest.score_target(words)[0] == pytest.approx(expected, abs=1e-4), words
        # The probing model's estimate is the probability from no context.
        assert probing.score_sentence(words, bos=False, eos=False) == pytest.approx(
            top.score_sentence(words, bos=False, eos=False), abs=1e-4)
        changed += abs(expected - top.score_sentence(words, bos=False, eos=False)) > 1e-3
    assert changed > 200  # most lists begin with a word some bigram extends


def test_estimates_by_hand(rest_models):
    probing, rest, _, _ = rest_models
    # "x": bigrams end in x, so it may extend left: the unigram model's -0.6, not the trigram's -0.8.
    assert rest.score_target(["x"])[0] == pytest.approx(-0.6, abs=1e-6)
    assert probing.score_target(["x"])[0] == pytest.approx(-0.8, abs=1e-6)
    # "x y": p1(x) + p2(y | x) = -0.6 - 0.25; "y z" is extended by "x y z": its rest is -1.2 - 0.8.
    assert rest.score_target(["x", "y"])[0] == pytest.approx(-0.85, abs=1e-6)
    assert rest.score_target(["y", "z"])[0] == pytest.approx(-2.0, abs=1e-6)
    # "x z": not in the bigram model: p1(x) + backoff2(x) + p2(z) = -0.6 - 0.45 - 0.9.
    assert rest.score_target(["x", "z"])[0] == pytest.approx(-1.95, abs=1e-6)
    # "z w": no trigram ends in it, so w's probability is final: p1(z) + p3(w | z) = -0.7 - 0.7.
    assert rest.score_target(["z", "w"])[0] == pytest.approx(-1.4, abs=1e-6)
    # A trigram's third word has all the context it can use: in "x z w" only x and "x z" have rest
    # costs, w costs p3(w | x z) = p3(w | z) = -0.7: -0.6 - 1.35 - 0.7.
    assert rest.score_target(["x", "z", "w"])[0] == pytest.approx(-2.65, abs=1e-6)


def test_composed_items_correct_their_estimates(rest_models):
    """Random sentences cut into random chart items, composed bottom-up as rules with words between
    children: the total after <s> ... </s> is the sentence's probability, as with the probing model."""
    probing, rest, _, _ = rest_models
    rng = random.Random(3)
    for words in random_word_lists(150, seed=4, max_length=9):
        totals = []
        for model in (probing, rest):
            state_rng = random.Random(rng.random())
            pieces = []  # (score so far, state): each piece of 1-3 words is a leaf item
            i = 0
            while i < len(words):
                n = state_rng.randint(1, 3)
                pieces.append(model.score_target(words[i : i + n]))
                i += n
            while len(pieces) > 1:  # join two neighbours, sometimes through a word-less rule
                j = state_rng.randrange(len(pieces) - 1)
                (a, left), (b, right) = pieces[j], pieces[j + 1]
                joined, state = model.score_target([left, right])
                pieces[j : j + 2] = [(a + b + joined, state)]
            score, root = pieces[0]
            boundaries, _ = model.score_sentence_boundaries(root)
            totals.append(score + boundaries)
        assert totals[1] == pytest.approx(totals[0], abs=1e-4), words
        assert totals[1] == pytest.approx(probing.score_sentence(words), abs=1e-4), words


def write_store_of(directory, seed, strategy):
    grammar = binarize(random_rules(seed, n_rules=20, max_arity=3), strategy, seed=seed)
    path = directory / f"{seed}-{strategy}"
    write_store(grammar, path, feature_names=FEATURES)
    return grammar, GrammarStore.open(path)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ("left", "icr"))
def test_searches_over_the_rest_model_find_the_brute_force_optimum(rest_models, tmp_path, seed, strategy):
    probing, rest, top, _ = rest_models
    grammar, store = write_store_of(tmp_path, seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    space = SearchSpace(max_unary_depth=2)
    words = random_sentence(seed, 2 + seed % 3)
    optimum = best_by_brute_force(grammar, words, top, weights, space)[0]
    for decoder in (ChartDecoder(store, rest, weights, space, exhaustive=True),
                    IncrementalDecoder(store, rest, weights, space, pop_limit=0),
                    TwoPassSearchDriver(store, rest, weights, space, exhaustive=True, two_pass_beam=math.inf,
                                        agenda_limit=0, max_pops=-1)):
        best = decoder.best(decoder.search(words), words)
        assert best.score == pytest.approx(optimum, abs=1e-4)
        assert best.features["lm"] == pytest.approx(probing.score_sentence(best.words), abs=1e-4)
    # Pruned: never above the optimum, and the 1-best's LM feature is the sentence's probability.
    for decoder in (ChartDecoder(store, rest, weights, space, pop_limit=2),
                    IncrementalDecoder(store, rest, weights, space, pop_limit=2)):
        best = decoder.best(decoder.search(words), words)
        assert best.score <= optimum + 1e-4
        assert best.features["lm"] == pytest.approx(probing.score_sentence(best.words), abs=1e-4)
        assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)


def test_recipe_builds_a_cached_rest_model_that_scores_sentences_like_lm_bin(tmp_path):
    """decoder.data.lm_build: lm.rest.bin from the same text as lm.bin (lmplz at every order, build_binary -r)."""
    from decoder.data import lm_build

    bin_dir = lm_build.REPOSITORY / "models" / "kenlm" / "build" / "bin"
    if not all((bin_dir / tool).exists() for tool in ("lmplz", "build_binary", "query")):
        pytest.skip("KenLM tools not built (bash models/kenlm/build_tools.sh)")
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(40)]
    weights = [1.0 / (i + 1) for i in range(40)]  # Zipf-like, so that n-grams repeat
    text = tmp_path / "lm.en"
    text.write_text("".join(" ".join(rng.choices(vocabulary, weights, k=rng.randint(3, 12))) + "\n"
                            for _ in range(400)))
    work = tmp_path / "work"
    work.mkdir()
    lm_build.build_language_model(text, tmp_path / "lm.bin", work, order=3, memory="64M")
    built = lm_build.build_rest_model(text, tmp_path / "lm.rest.bin", work, order=3, memory="64M")
    assert not built["cached"] and built["order"] == 3
    # Its ARPA files and the partial binary are removed (lmplz may leave temporary files of its own).
    assert not [p for p in work.iterdir() if p.suffix in (".arpa", ".partial")]
    assert not list(tmp_path.glob("*.partial"))
    assert lm_build.build_rest_model(text, tmp_path / "lm.rest.bin", work, order=3)["cached"]
    probing, rest = LanguageModel(tmp_path / "lm.bin"), LanguageModel(tmp_path / "lm.rest.bin")
    assert (probing.kind, rest.kind, rest.order) == ("probing", "rest_probing", 3)
    assert list(rest.vocab_indices(vocabulary)) == list(probing.vocab_indices(vocabulary))
    sentences = [rng.choices(vocabulary, weights, k=rng.randint(1, 10)) for _ in range(100)]
    differ = 0
    for words in sentences:
        assert rest.score_sentence(words) == pytest.approx(probing.score_sentence(words), abs=1e-5)
        differ += abs(rest.score_sentence(words, bos=False, eos=False)
                      - probing.score_sentence(words, bos=False, eos=False)) > 1e-3
    assert differ > 50


def _words_estimate(model, top, lower, words):
    """The estimate of words of unknown left context from the ARPA files: rest_estimate on the rest
    model, the probability from no context on the probing one."""
    if not words:
        return 0.0
    if model.kind == "rest_probing":
        return rest_estimate(top, lower, words)
    return top.score_sentence(words, bos=False, eos=False)


@pytest.mark.parametrize("kind", ["probing", "rest_probing"])
def test_partial_estimate_scores_words_after_unrevealed_words_as_of_unknown_context(rest_models, kind):
    """The incremental search's estimate over a trie node (a child state with its right side cut to its
    `right` most recent words, its left side to none): the words before the child as a rule's words,
    the words after it as a rule's words after the revealed ones, less those; whole children: the
    rule's LM score (score_target)."""
    probing, rest, top, lower = rest_models
    model = rest if kind == "rest_probing" else probing
    rng = random.Random(5)
    checked = 0
    for _ in range(300):
        before = [rng.choice(WORDS) for _ in range(rng.randint(0, 3))]
        piece = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
        after = [rng.choice(WORDS) for _ in range(rng.randint(0, 3))]
        _, child = model.score_target(piece)
        whole = model.score_partial_target(before + [(child, 0)] + after)
        assert whole == pytest.approx(model.score_target(before + [child] + after)[0], abs=1e-5)
        vocabulary = dict(zip(model.vocab_indices(WORDS), WORDS))
        context = [vocabulary[w] for w in child.right_words]
        if child.left_length == 0:
            continue  # (a child whose first word no n-gram extends: the words before it pay their backoffs)
        for right in range(len(context) + 1):
            node, cut = child.partial(0, right)
            shown = context[len(context) - right:]
            expected = _words_estimate(model, top, lower, before)
            if right == len(context):  # the right side whole: the words after it have their context
                if len(piece) < top.order - 1:
                    continue  # (a shorter piece's context goes on into the words before it)
                expected += sum(top.logprob(piece + after[:k], after[k]) for k in range(len(after)))
            elif after:
                expected += _words_estimate(model, top, lower, shown + after) - \
                    _words_estimate(model, top, lower, shown)
            got = model.score_partial_target(before + [(node, cut)] + after)
            assert got == pytest.approx(expected, abs=1e-4), (before, piece, after, right)
            checked += 1
    assert checked > 200
