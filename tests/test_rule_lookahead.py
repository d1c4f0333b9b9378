"""Cube pruning's look-ahead on the rules' axis (`rule_lookahead`, decoder.settings): past a popped
hypothesis's next rule that scores more than rule_lookahead below it, the rules after it are pushed too.
It only adds corners to the heap: with no pop limit the search still equals exhaustive search, and with
one pop per cell the pops (so the chart and the best derivation) are the same as without it while more
hypotheses are scored."""
import pytest

from decoder.errors import SettingsError
from decoder.search.driver import ChartSearchDriver
from decoder.search.model import SearchSpace, Weights
from decoder.settings import SearchSettings

from search_fixtures import FEATURES, WEIGHTS, random_sentence, random_store_cache
from search_fixtures import lm  # noqa: F401 (the fixture)

SEEDS = range(16)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    return random_store_cache(tmp_path_factory, lambda seed: "left" if seed % 2 else "icr", n_rules=30, max_arity=3)


def decode(store, lm, words, **settings):
    driver = ChartSearchDriver(store, lm, Weights(FEATURES, WEIGHTS), SearchSpace(max_unary_depth=1), **settings)
    result = driver.search(words)
    return result, driver.best(result, words)


@pytest.mark.parametrize("seed", SEEDS)
def test_no_pop_limit_still_equals_exhaustive(lm, stores, seed):
    words = random_sentence(seed, 5)
    _, exhaustive = decode(stores(seed), lm, words, exhaustive=True)
    _, cube = decode(stores(seed), lm, words, pop_limit=0, rule_lookahead=1e-9)
    assert cube.score == pytest.approx(exhaustive.score, abs=1e-4)


def test_one_pop_per_cell_same_pops_more_corners(lm, stores):
    """One pop per cell: the pop is the best of the groups' first corners either way, so the chart is the
    same; the look-ahead only pushes (scores) more corners after it, on some sentences."""
    more = 0
    for seed in SEEDS:
        words = random_sentence(seed, 6)
        off, best_off = decode(stores(seed), lm, words, pop_limit=1, unary_pop_limit=1)
        on, best_on = decode(stores(seed), lm, words, pop_limit=1, unary_pop_limit=1, rule_lookahead=1e-9)
        assert best_on.score == best_off.score and best_on.words == best_off.words
        assert on.stats["items"] == off.stats["items"] and on.stats["edges"] == off.stats["edges"]
        assert on.stats["edges_proposed"] >= off.stats["edges_proposed"]
        more += on.stats["edges_proposed"] > off.stats["edges_proposed"]
        # a look-ahead larger than any score gap pushes nothing more
        huge, _ = decode(stores(seed), lm, words, pop_limit=1, unary_pop_limit=1, rule_lookahead=1e9)
        assert huge.stats["edges_proposed"] == off.stats["edges_proposed"]
    assert more > 0


def test_setting_is_checked():
    assert SearchSettings().rule_lookahead == 0.0
    assert SearchSettings(rule_lookahead=0.5).rule_lookahead == 0.5
    with pytest.raises(SettingsError, match="rule_lookahead"):
        SearchSettings(rule_lookahead=-1.0)
    with pytest.raises(SettingsError, match="rule_lookahead"):
        SearchSettings(rule_lookahead="0.5")


def test_only_searches_with_a_cubes_rules_axis_take_it():
    # the incremental search has no cube: the setting would be ignored, so it is refused
    assert SearchSettings(search="two-pass", rule_lookahead=0.5).rule_lookahead == 0.5
    with pytest.raises(SettingsError, match="rule_lookahead.*not of search = 'incremental'"):
        SearchSettings(search="incremental", rule_lookahead=0.5)
    assert SearchSettings(search="incremental", rule_lookahead=0.0).search == "incremental"


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "half"])
def test_cli_refuses_a_bad_value_as_a_usage_error(value, capsys):
    from decoder.cli import build_parser

    with pytest.raises(SystemExit) as exit_info:
        build_parser("translate").parse_args(["translate", "--rule-lookahead", value])
    assert exit_info.value.code == 2
    assert "--rule-lookahead" in capsys.readouterr().err
