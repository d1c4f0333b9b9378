"""bench.incremental_misses on test_decoder's tiny system: the whole run (both searches, the diagnosis
plumbing, the report), and each rule's rank in its group against the grammar arrays read directly."""
import json

import numpy as np
import pytest

from bench import incremental_misses

from test_decoder import write_toy_system

SENTENCES = ["la casa es pequeña", "el perro es verde", "la casa verde", "un perro", "la casa pequeña es verde"]


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    directory = tmp_path_factory.mktemp("incremental-misses")
    write_toy_system(directory, sentences=SENTENCES)
    return directory


def test_the_diagnosis_runs_over_both_searches_and_writes_its_report(system, tmp_path):
    out = tmp_path / "misses.json"
    incremental_misses.main(["--config", str(system / "config.toml"), "--test", str(system / "test.es"),
                             "--sentences", str(len(SENTENCES)), "--pop-limit", "1", "--out", str(out)])
    report = json.loads(out.read_text())
    assert report["pop_limit"] == 1 and [row["verse"] for row in report["verses"]] == [1, 2, 3, 4, 5]
    for row in report["verses"]:
        assert row["diff"] == pytest.approx(row["incremental"] - row["cube"], abs=1e-3)
        assert ("misses" in row) == (row["diff"] < -1e-4)


def test_rule_ranks_are_positions_among_each_keys_rules(system):
    from decoder.decoder import Decoder

    decoder = Decoder.from_config(system / "config.toml", search="incremental")
    arrays = decoder.chart.grammar.arrays
    ranks = incremental_misses.rule_ranks(arrays)
    expected = {}
    for rules, starts in ((arrays["pair_rules_sorted"], np.asarray(arrays["pair_right_keys"])["rules_lo"]),
                          (arrays["single_rules_sorted"], np.asarray(arrays["single_range"])[:, 0])):
        starts = sorted({int(s) for s in starts if s < len(rules)})
        for lo, hi in zip(starts, starts[1:] + [len(rules)]):
            for rank, rule in enumerate(np.asarray(rules)[lo:hi].tolist()):
                expected.setdefault(rule, rank)
    assert expected and ranks == expected
