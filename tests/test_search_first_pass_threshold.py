"""The two-pass search's first_pass_threshold (an experimental setting; the paper's beta, Venugopal, Zollmann
and Vogel 2007): each cell's first-pass search (each unary round apart) stops at a complete pop scoring more
than the threshold below the best complete pop so far, before adding it (ext/_chart.pxd cky_round_stops).
Checked by brute force against the same search without the threshold: a stopped search's pops are exactly
the unstopped one's up to the first pop the rule stops at."""
import numpy as np
import pytest

from decoder.search.driver import ChartSearchDriver
from decoder.search.model import SearchSpace, Weights
from decoder.search.readback import EDGE_OOV
from decoder.search.two_pass import TwoPassSearchDriver

from search_fixtures import FEATURES, WEIGHTS, random_sentence
from test_search_chart import models, stores  # noqa: F401 (fixtures: the LMs, stores of random grammars)

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


@pytest.mark.parametrize("strategy", ("left", "icr"))
def test_stopped_searches_are_the_prefix_of_the_unstopped_pops(models, stores, strategy):
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    stopped_some = checked = 0
    for seed in range(12):
        _, store = stores(seed, strategy, n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        for limit in (0, 4, 30):
            unstopped_driver = TwoPassSearchDriver(store, lm, weights, SPACE, pop_limit=limit, unary_pop_limit=-1)
            unstopped = searches(unstopped_driver, unstopped_driver.search(words))
            for threshold in (0.3, 1.0, 2.5):
                driver = TwoPassSearchDriver(store, lm, weights, SPACE, pop_limit=limit, unary_pop_limit=-1,
                                             first_pass_threshold=threshold)
                stopped = check_prefix_of_unstopped(searches(driver, driver.search(words)), unstopped, threshold)
                if stopped is not None:
                    checked += 1
                    stopped_some += stopped
    assert checked > 50 and stopped_some > 10  # the threshold stops searches, and the checks ran


def test_an_unreachable_threshold_changes_nothing_edge_by_edge(models, stores):
    """0 (off) and a threshold larger than any score gap give the same first-pass chart: every item and edge,
    in order."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    for seed in range(8):
        _, store = stores(seed, "left", n_rules=20, max_arity=4)
        words = random_sentence(seed, 6)
        for limit in (1, 5, 0):
            charts = []
            for threshold in (0.0, 1e9):
                driver = TwoPassSearchDriver(store, lm, weights, SPACE, pop_limit=limit,
                                             first_pass_threshold=threshold)
                charts.append(driver.search(words).chart)
            assert charts[0].keys() == charts[1].keys()
            for key in charts[0]:
                assert np.array_equal(np.asarray(charts[0][key]), np.asarray(charts[1][key])), (seed, limit, key)


def test_never_stops_at_the_first_pop(models, stores):
    """A threshold of almost 0 stops each search at its first pop that is not the best so far: every queue
    search keeps its first pop (and whatever follows it as good or better)."""
    _, lm = models
    weights = Weights(FEATURES, WEIGHTS)
    for seed in range(6):
        _, store = stores(seed, "icr", n_rules=20, max_arity=4)
        words = random_sentence(seed, 5)
        unstopped_driver = TwoPassSearchDriver(store, lm, weights, SPACE, pop_limit=0)
        unstopped = searches(unstopped_driver, unstopped_driver.search(words))
        driver = TwoPassSearchDriver(store, lm, weights, SPACE, pop_limit=0, first_pass_threshold=1e-9)
        tiny = searches(driver, driver.search(words))
        assert all(len(pops) >= 1 for _, pops in tiny)
        assert tiny[0] == (unstopped[0][0], unstopped[0][1][:stop_index([p[3] for p in unstopped[0][1]], 1e-9)])


def test_cube_pruning_takes_no_threshold(models, stores):
    """Cube pruning's searches run to their pop limit: the rule is the two-pass first pass's only."""
    _, lm = models
    driver = ChartSearchDriver(stores(0, "left", n_rules=20, max_arity=4)[1], lm, Weights(FEATURES, WEIGHTS), SPACE)
    assert driver.engine.round_score_beam == 0.0 and driver.engine.round_item_limit == 0
