"""The chart search's `lm_state_minimized_recombinations`: recombinations that only KenLM's state
minimization allows, on a hand-made bigram model where the answer is known.

In the bigram model below, x and y start and end no bigram: KenLM's minimized state of "x" is the
same as that of "y" (no word to the left can change their probability, and they are context for
nothing), so X items translating one source word as x or as y recombine although their boundary
words differ. z is a context word ("z </s>", "<s> z"): its state keeps it.
"""
import pytest

from decoder.binarize import binarize
from decoder.grammar import Rule
from decoder.lm import LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.incremental import IncrementalSearchDriver
from decoder.search.model import SearchSpace, Weights
from decoder.store import GrammarStore, write_store

BIGRAMS = """\\data\\
ngram 1=6
ngram 2=2

\\1-grams:
-1.0\t<s>\t-0.3
-1.0\t</s>
-1.0\t<unk>
-0.7\tx
-0.8\ty
-0.6\tz\t-0.2

\\2-grams:
-0.3\t<s> z
-0.2\tz </s>

\\end\\
"""


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    directory = tmp_path_factory.mktemp("minimization")
    (directory / "lm.arpa").write_text(BIGRAMS)
    rules = [Rule("X", ("a",), ("x",), (), (0.1,)), Rule("X", ("a",), ("y",), (), (0.2,)),
             Rule("X", ("b",), ("z",), (), (0.3,)), Rule("X", (0, 1), (0, 1), ("X", "X"), (0.4,))]
    write_store(binarize(rules, "left"), directory / "store", feature_names=["p"])
    weights = Weights(["p"], {"p": 1.0, "lm": 1.0, "word_count": 0.0, "oov": -3.0, "glue": -0.5})
    return GrammarStore.open(directory / "store"), LanguageModel(str(directory / "lm.arpa")), weights


def test_the_states_of_x_and_y_are_equal_and_z_differs(system):
    _, lm, _ = system
    x, y, z = (lm.score_target([word])[1] for word in "xyz")
    assert x == y and x != z


# sentence -> (recombinations, of which only by minimization), every hypothesis popped:
# "a": X[0,1] gets x and y: one recombination, by minimization.
# "a b": that one; X[0,2] has one hypothesis ("x z" through the one X[0,1] item); GOAL[0,2] gets
#   "x z" by glue start (X[0,2]) and by glue concatenation (GOAL[0,1] X[1,2]): the same boundary
#   words, a recombination without minimization.
# "b a": the same with "z x".
@pytest.mark.parametrize("driver", [ChartSearchDriver, IncrementalSearchDriver])
@pytest.mark.parametrize("sentence, expected", [("a", (1, 1)), ("a b", (2, 1)), ("b a", (2, 1)),
                                                ("b", (0, 0))])
def test_minimized_recombinations_counted(system, driver, sentence, expected):
    store, lm, weights = system
    search = driver(store, lm, weights, SearchSpace(), pop_limit=1000, table_limit=0)
    plain = search.run(sentence.split())
    assert plain.stats["recombinations"] == expected[0] and "lm_state_minimized_recombinations" not in plain.stats
    search.count_minimized_recombinations = True
    counted = search.run(sentence.split())
    assert (counted.stats["recombinations"], counted.stats["lm_state_minimized_recombinations"]) == expected
    assert counted.stats["items"] == plain.stats["items"] and counted.stats["edges"] == plain.stats["edges"]
