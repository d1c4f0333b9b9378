"""The chart's size guard (ext/_chart.pyx CHART_LIMIT): a sentence whose chart outgrows it fails with
ChartLimitError instead of exhausting memory inside nogil code, and the next sentence decodes as if
nothing had happened."""
import pytest

from decoder._ext import compiled_module
from decoder.binarize import binarize
from decoder.errors import ChartLimitError
from decoder.lm import LanguageModel
from decoder.search.driver import ChartSearchDriver
from decoder.search.model import Weights
from decoder.store import GrammarStore, write_store

from search_fixtures import FEATURES, WEIGHTS_HEAVIER_LM as WEIGHTS, random_rules, random_sentence, write_arpa


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "icr"
    write_store(binarize(random_rules(3, n_rules=30, max_arity=3), "icr"), path, feature_names=FEATURES)
    lm = LanguageModel(write_arpa(tmp_path_factory.mktemp("lm")))
    return ChartSearchDriver(GrammarStore.open(path), lm, Weights(FEATURES, WEIGHTS), exhaustive=True)


def test_the_default_limit_is_the_modules():
    assert compiled_module("_chart").CHART_LIMIT >= 10_000_000


def test_a_chart_over_the_limit_fails_and_the_next_sentence_is_unharmed(driver):
    words = random_sentence(5, 7)
    expected = [(round(h.score, 6), h.text) for h in driver.kbest(driver.run(words), words, 3, unique=False)]
    size = driver.engine.n_items + driver.engine.n_edges
    assert size > 40
    driver.engine.chart_limit = size // 2
    with pytest.raises(ChartLimitError, match="7-word sentence outgrew"):
        driver.run(words)
    driver.engine.chart_limit = size  # exactly enough
    again = [(round(h.score, 6), h.text) for h in driver.kbest(driver.run(words), words, 3, unique=False)]
    assert again == expected
