"""`pop_threshold` (decoder.settings): a cell's search (each unary round apart) stops at a complete pop
scoring more than the threshold below the best complete pop so far, before adding it; cube pruning and
incremental search share the rule (ext/_chart.pxd cky_round_stops) with the two-pass first pass's
first_pass_threshold. Checked by brute force against the same search without the threshold: a stopped
search's pops are exactly the unstopped one's up to the first pop the rule stops at."""
import argparse

import numpy as np
import pytest

from decoder.cli import translate
from decoder.config import load_config
from decoder.errors import ConfigError, SettingsError
from decoder.search.driver import ChartSearchDriver
from decoder.search.incremental import IncrementalSearchDriver
from decoder.search.incremental_reference import IncrementalReferenceDecoder
from decoder.search.model import SearchSpace, Weights
from decoder.search.readback import EDGE_OOV
from decoder.settings import SearchSettings

from decoder._ext import compiled_module
from decoder.lm import ArpaReference

from search_fixtures import FEATURES, WEIGHTS, random_sentence, write_arpa
from test_search_chart import models, stores  # noqa: F401 (fixtures: the LMs, stores of random grammars)

_lm = compiled_module("_lm")

DRIVERS = {"cube": ChartSearchDriver, "incremental": IncrementalSearchDriver}
SPACE = SearchSpace(max_unary_depth=2)


def searches(driver, result):
    """The chart's queue searches in the order they ran: per (cell, unary round, GOAL or not), the complete
    pops in order as (rule, tail0, tail1, the hypothesis' score), from the edges (one per pop, appended in
    pop order; an edge's score is the hypothesis' score less its tails' item scores)."""
    chart = result.chart
    goal = driver.grammar.goal_symbol
    score = chart["item_score"]
    out, index = [], {}
    for e in range(len(chart["edge_head"])):
        rule = int(chart["edge_rule"][e])
        if rule == EDGE_OOV:
            continue
        head = int(chart["edge_head"][e])
        key = (int(chart["item_cell"][head]), int(chart["item_round"][head]), int(chart["item_symbol"][head]) == goal)
        if key not in index:
            index[key] = len(out)
            out.append((key, []))
        t0, t1 = int(chart["edge_tail0"][e]), int(chart["edge_tail1"][e])
        hyp = chart["edge_score"][e] + (score[t0] if t0 >= 0 else 0.0) + (score[t1] if t1 >= 0 else 0.0)
        out[index[key]][1].append((rule, t0, t1, float(hyp)))
    return out


def stop_index(scores, threshold):
    """Where the rule stops a search whose pops would score `scores` in order: the first pop more than
    threshold below the best before it (len(scores): never)."""
    for i in range(1, len(scores)):
        if scores[i] < max(scores[:i]) - threshold:
            return i
    return len(scores)


def near_the_boundary(scores, threshold):
    """A pop within rounding of the threshold (the test cannot tell which side the search saw)."""
    return any(abs(scores[i] - (max(scores[:i]) - threshold)) < 1e-6 for i in range(1, len(scores)))


def check_prefix_of_unstopped(stopped, unstopped, threshold):
    """Brute force: up to the first queue search that differs the two charts are the same (so are the inputs
    of that search), and every search before it had no pop the rule stops at; that search's pops are the
    unstopped one's up to its stopping pop. Returns whether the threshold stopped a search (else the charts
    are equal throughout), or None where a pop is too near the threshold to tell."""
    for (key, pops), (other_key, other_pops) in zip(stopped, unstopped):
        assert key == other_key
        scores = [p[3] for p in other_pops]
        if near_the_boundary(scores, threshold):
            return None
        cut = stop_index(scores, threshold)
        assert pops == other_pops[:cut], key
        if cut < len(other_pops):
            return True
    assert len(stopped) == len(unstopped)
    return False


@pytest.mark.parametrize("search", DRIVERS)
@pytest.mark.parametrize("strategy", ("left", "icr"))
def test_stopped_searches_are_the_prefix_of_the_unstopped_pops(models, stores, search, strategy):
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    stopped_some = checked = 0
    for seed in range(12):
        _, store = stores(seed, strategy, n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        for limit in (0, 4, 30):
            unstopped_driver = DRIVERS[search](store, lm, weights, SPACE, pop_limit=limit, unary_pop_limit=-1)
            unstopped = searches(unstopped_driver, unstopped_driver.search(words))
            for threshold in (0.3, 1.0, 2.5):
                driver = DRIVERS[search](store, lm, weights, SPACE, pop_limit=limit, unary_pop_limit=-1,
                                         pop_threshold=threshold)
                result = driver.search(words)
                stopped = check_prefix_of_unstopped(searches(driver, result), unstopped, threshold)
                if stopped is not None:
                    checked += 1
                    stopped_some += stopped
                best = driver.best(result, words)
                if best is not None:
                    assert weights.dot(best.features) == pytest.approx(best.score, abs=1e-4)
    assert checked > 50 and stopped_some > 10  # the threshold stops searches, and the checks ran


@pytest.mark.parametrize("search", DRIVERS)
def test_an_unreachable_threshold_changes_nothing_edge_by_edge(models, stores, search):
    """0 (off) and a threshold larger than any score gap give today's chart: every item and edge, in order."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    for seed in range(8):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        for limit in (1, 5, 0):
            charts = []
            for threshold in (0.0, 1e9):
                driver = DRIVERS[search](store, lm, weights, SPACE, pop_limit=limit, pop_threshold=threshold)
                charts.append(driver.search(words).chart)
            assert charts[0].keys() == charts[1].keys()
            for key in charts[0]:
                assert np.array_equal(np.asarray(charts[0][key]), np.asarray(charts[1][key])), (seed, limit, key)


@pytest.mark.parametrize("search", DRIVERS)
def test_never_stops_at_the_first_pop(models, stores, search):
    """A threshold of almost 0 stops each search at its first pop that is not the best so far: every queue
    search keeps its first pop (and whatever follows it as good or better)."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    for seed in range(6):
        _, store = stores(seed, "icr", n_rules=20, max_arity=4)
        words = random_sentence(seed, 5)
        unstopped_driver = DRIVERS[search](store, lm, weights, SPACE, pop_limit=0)
        unstopped = searches(unstopped_driver, unstopped_driver.search(words))
        driver = DRIVERS[search](store, lm, weights, SPACE, pop_limit=0, pop_threshold=1e-9)
        tiny = searches(driver, driver.search(words))
        assert all(len(pops) >= 1 for _, pops in tiny)
        assert tiny[0] == (unstopped[0][0], unstopped[0][1][:stop_index([p[3] for p in unstopped[0][1]], 1e-9)])


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ("left", "icr"))
def test_reference_stops_where_its_unstopped_search_says(models, stores, seed, strategy):
    """The reference's queue runs: identical to the unstopped reference's up to the first that the threshold
    stops, which is the unstopped run's prefix up to its stopping pop."""
    reference_lm, _ = models
    grammar, _ = stores(seed, strategy)
    weights = Weights(FEATURES, WEIGHTS)
    words = random_sentence(seed, 2 + seed % 4)
    unstopped = IncrementalReferenceDecoder(grammar, reference_lm, weights, SPACE)
    unstopped.decode(words)
    for threshold in (0.5, 2.0):
        stopped = IncrementalReferenceDecoder(grammar, reference_lm, weights, SPACE, pop_threshold=threshold)
        stopped.decode(words)
        for scores, other in zip(stopped.queue_pop_scores, unstopped.queue_pop_scores):
            if near_the_boundary(other, threshold):
                break
            cut = stop_index(other, threshold)
            assert scores == pytest.approx(other[:cut])
            if cut < len(other):
                break


@pytest.fixture(scope="module")
def unigram_models(tmp_path_factory):
    """The toy LM's unigrams alone: the reference's as an order-1 LM, KenLM's as a bigram model with no
    bigrams (KenLM loads order 2 and up), whose states carry no words. Every word is scored at once and
    exactly, so the compiled items' scores are the reference's and the two pop in the same order (over the
    trigram the compiled items carry KenLM's estimates of their left words, which the reference leaves
    unscored: their complete pops differ by more than a constant, and so do the pops a threshold stops at)."""
    directory = tmp_path_factory.mktemp("unigram")
    with open(write_arpa(directory)) as arpa:
        lines = arpa.read().split("\\1-grams:\n")[1].split("\n\n")[0].splitlines()
    unigrams = "\n".join("\t".join(line.split("\t")[:2]) for line in lines)
    order1, order2 = directory / "order1.arpa", directory / "order2.arpa"
    order1.write_text(f"\\data\\\nngram 1={len(lines)}\n\n\\1-grams:\n{unigrams}\n\n\\end\\\n")
    order2.write_text(f"\\data\\\nngram 1={len(lines)}\nngram 2=0\n\n\\1-grams:\n{unigrams}\n\n\\2-grams:\n\n\\end\\\n")
    return ArpaReference(str(order1)), _lm.LanguageModel(str(order2))


def rounded(scores):
    return [round(x, 3) for x in scores]


@pytest.mark.parametrize("strategy", ("left", "icr"))
def test_compiled_with_a_threshold_and_no_pop_limit_equals_the_reference(unigram_models, stores, strategy):
    """No pop limit, thresholds 0, 0.5 and 2: the compiled search makes the reference's queue searches, each
    with the same complete pops (scores, in order), and the same 1-best and k-best scores."""
    reference_lm, lm = unigram_models
    weights = Weights(FEATURES, WEIGHTS)
    stopped = 0
    for seed in range(12):
        grammar, store = stores(seed, strategy)
        words = random_sentence(seed, 2 + seed % 4)
        n_pops = {}
        for threshold in (0.0, 0.5, 2.0):
            reference = IncrementalReferenceDecoder(grammar, reference_lm, weights, SPACE, pop_threshold=threshold)
            expected = reference.decode(words, k=4)
            driver = IncrementalSearchDriver(store, lm, weights, SPACE, pop_limit=0, unary_pop_limit=-1,
                                             pop_threshold=threshold, weight_pushing=False)  # (as the reference)
            result = driver.search(words)
            # the same queue searches (the cells in another order), each with the same pops
            pops = sorted(([p[3] for p in found] for _, found in searches(driver, result)), key=rounded)
            expected_pops = sorted((s for s in reference.queue_pop_scores if s), key=rounded)
            assert len(pops) == len(expected_pops)
            for found, wanted in zip(pops, expected_pops):
                assert found == pytest.approx(wanted, abs=1e-4), (seed, threshold)
            n_pops[threshold] = sum(map(len, pops))
            best = driver.best(result, words)
            assert (best is None) == (expected.best is None)
            if best is not None:
                assert best.score == pytest.approx(expected.best.score, abs=1e-4), (seed, threshold)
                assert [h.score for h in driver.kbest(result, words, 4, unique=False)] == \
                    pytest.approx([d.score for d in expected.kbest], abs=1e-4)
        stopped += n_pops[0.5] < n_pops[0.0]
    assert stopped >= 3  # (the threshold stops some searches: the comparison is not of unstopped searches only)


def test_setting_is_checked_and_named():
    assert SearchSettings().pop_threshold == 0.0
    assert SearchSettings(search="incremental", pop_threshold=2.5).pop_threshold == 2.5
    for bad in (-1.0, "2", True, float("nan")):
        with pytest.raises(SettingsError, match="pop_threshold"):
            SearchSettings(pop_threshold=bad)
    # two-pass keeps its own name for the rule (first_pass_threshold): this one would be ignored there
    with pytest.raises(SettingsError, match="pop_threshold.*not of search = 'two-pass'"):
        SearchSettings(search="two-pass", pop_threshold=1.0)
    assert SearchSettings(search="two-pass", first_pass_threshold=1.0).first_pass_threshold == 1.0


def test_config_key_and_flag(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('store = "s"\nlm = "lm.bin"\nsearch = "incremental"\npop_threshold = 3\n')
    assert load_config(path).decoder_arguments()["pop_threshold"] == 3.0
    path.write_text('store = "s"\nlm = "lm.bin"\npop_threshold = -1\n')
    with pytest.raises((ConfigError, SettingsError), match="pop_threshold"):
        load_config(path)
    parser = argparse.ArgumentParser()
    translate.add_arguments(parser)
    assert parser.parse_args(["--pop-threshold", "2.5"]).pop_threshold == 2.5
    assert "pop_threshold" in translate.OVERRIDING_FLAGS
    with pytest.raises(SystemExit):
        parser.parse_args(["--pop-threshold", "-1"])
