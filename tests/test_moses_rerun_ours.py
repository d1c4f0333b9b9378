"""bench.moses_rerun_ours on a toy model: which verses it decodes and which of Moses' scores it
compares them with, for a results file that starts later in the source (its "skip") and for --skip
/ --sentences (held-out verses)."""
from __future__ import annotations

import json

import pytest

from bench import moses_rerun_ours
from decoder.decoder import Decoder

from test_decoder import write_toy_system

SOURCE = ["la casa", "el perro", "la casa es pequeña", "un perro", "el perro es verde", "la casa verde"]
TABLE_LIMIT = 20


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("model")
    write_toy_system(directory, sentences=SOURCE)
    decoder = Decoder.from_config(directory / "config.toml", max_unary_depth=0, table_limit=TABLE_LIMIT,
                                  rule_order="score", pop_limit=100)
    scores = [decoder.translate(line).score for line in SOURCE]  # the toy model's search is exhaustive at 100
    return directory, scores


def results_file(directory, name, first, scores):
    """A bench_moses-like results file over SOURCE[first:first + len(scores)]."""
    path = directory / name
    path.write_text(json.dumps({"demo": {"sentences": len(scores), "skip": first,
                                         "config": str(directory / "config.toml"),
                                         "ours": [{"table_limit": TABLE_LIMIT}],
                                         "moses": {"moses-default-100": {"scores": scores}}}}))
    return str(path)


def rerun(directory, results, *options):
    out = directory / "rerun.json"
    if out.exists():
        out.unlink()
    assert moses_rerun_ours.main(["--results", results, "--source", str(directory / "test.es"), "--out", str(out),
                                  "--rule-orders", "score", "--pop-limits", "100", *options]) == 0
    (row,) = json.loads(out.read_text())[0]["rows"]
    return row


def test_skip_decodes_and_compares_the_held_out_verses(model):
    directory, ours = model
    # The results cover source verses 2-6; Moses is better on their first two, worse on the last three
    # (by a margin, and within the tolerance on verse 5).
    moses = [ours[1] + 1.0, ours[2] + 0.5, ours[3] - 1.0, ours[4] + 5e-5, ours[5] - 2.0]
    results = results_file(directory, "moses.json", 1, moses)

    every = rerun(directory, results)
    assert every["verses"] == 5 and every["skip"] == 0
    assert every["scores"] == pytest.approx(ours[1:6], abs=1e-9)
    assert every["against"]["moses-default-100"]["ours_at_least_moses"] == 3

    held_out = rerun(directory, results, "--skip", "2")
    assert held_out["verses"] == 3 and held_out["skip"] == 2
    assert held_out["scores"] == pytest.approx(ours[3:6], abs=1e-9)
    c = held_out["against"]["moses-default-100"]
    assert (c["ours_at_least_moses"], c["ours_better"]) == (3, 2)
    assert c["moses_average"] == pytest.approx(sum(moses[2:]) / 3)

    window = rerun(directory, results, "--skip", "1", "--sentences", "2")
    assert window["scores"] == pytest.approx(ours[2:4], abs=1e-9)
    assert window["against"]["moses-default-100"]["ours_at_least_moses"] == 1


def test_skip_beyond_the_results_is_a_usage_error(model):
    directory, ours = model
    results = results_file(directory, "moses3.json", 0, ours[:3])
    with pytest.raises(SystemExit) as error:
        moses_rerun_ours.main(["--results", results, "--source", str(directory / "test.es"), "--skip", "3",
                               "--out", str(directory / "never.json")])
    assert error.value.code == 2
    assert not (directory / "never.json").exists()
