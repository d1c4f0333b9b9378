"""bench.moses_extend_results: Moses' per-verse scores of a base file and of a bench_moses run on the
verses after it, concatenated only when the run continues the base and passes the checks."""
from __future__ import annotations

import json

import pytest

from bench import moses_extend_results as mer
from decoder.errors import InputError

NAME = "moses-default-100"


def checks(verses, failing=0):
    ok = verses - failing
    return {"verses": verses, "lm_vs_kenlm_ok": verses, "total_vs_weights_dot_features_ok": ok,
            "our_score_vs_total_minus_offset_ok": ok}


def base():
    return {"machine": {"git_commit": "a"},
            "demo": {"sentences": 3, "config": "c.toml", "rule_table": "r.gz", "ours": [{"table_limit": 20}],
                     "note": "old", "moses": {NAME: {"scores": [-1.0, -2.0, -3.0], "average_score": -2.0,
                                                     "verses_2_3": {"texts": ["x", "y"]}}}}}


def extension(skip=3, failing=0, table_limit=20, config="c.toml"):
    return {"command": "python -m bench.bench_moses --skip 3", "created": "now", "machine": {"git_commit": "b"},
            "demo": {"sentences": 2, "skip": skip, "config": config, "rule_table": "r.gz", "table_limit": table_limit,
                     "ours": [], "moses": {NAME: {"kind": "default", "pop_limit": 100, "scores": [-10.0, -4.0],
                                                  "texts": ["p", "q"], "process_cpu_seconds": 40.0,
                                                  "checks": checks(2, failing)},
                                           "moses-our-rules-100": {"scores": [0.0, 0.0], "checks": checks(2)}}}}


def test_extend_concatenates_scores_and_keeps_both_runs():
    out = mer.extend(base(), extension(), note="new")
    demo = out["demo"]
    assert (demo["sentences"], demo["skip"], demo["table_limit"], demo["note"]) == (5, 0, 20, "new")
    assert list(demo["moses"]) == [NAME]  # only the runs both have
    run = demo["moses"][NAME]
    assert run["scores"] == [-1.0, -2.0, -3.0, -10.0, -4.0]
    assert run["average_score"] == pytest.approx(-4.0)
    assert run["verses_2_3"] == {"texts": ["x", "y"]}
    assert run["verses_4_5"]["texts"] == ["p", "q"] and run["verses_4_5"]["process_cpu_seconds"] == 40.0
    assert out["machine"] == {"git_commit": "a"} and out["extensions"][0]["verses"] == "verses_4_5"
    # and once more: a file extended twice, from its own skip
    again = mer.extend(out, extension(skip=5))
    assert again["demo"]["moses"][NAME]["scores"][5:] == [-10.0, -4.0]
    assert [e["verses"] for e in again["extensions"]] == ["verses_4_5", "verses_6_7"]


@pytest.mark.parametrize("changes, message", [({"skip": 2}, "starts after verse 2"),
                                              ({"failing": 1}, "fail the checks"),
                                              ({"table_limit": 0}, "table limit differs"),
                                              ({"config": "other.toml"}, "config differs")])
def test_extend_refuses_what_does_not_continue_the_base(changes, message):
    with pytest.raises(InputError, match=message) as error:
        mer.extend(base(), extension(**changes), extension_path="ext.json")
    assert str(error.value).startswith("ext.json: ")


def test_main_writes_only_a_checked_extension(tmp_path, capsys):
    (tmp_path / "base.json").write_text(json.dumps(base()))
    (tmp_path / "good.json").write_text(json.dumps(extension()))
    (tmp_path / "bad.json").write_text(json.dumps(extension(failing=2)))
    assert mer.main([str(tmp_path / "base.json"), str(tmp_path / "bad.json"), "--out", str(tmp_path / "out.json")]) == 1
    assert "fail the checks" in capsys.readouterr().err and not (tmp_path / "out.json").exists()
    assert mer.main([str(tmp_path / "base.json"), str(tmp_path / "good.json"), "--out", str(tmp_path / "out.json")]) == 0
    assert json.loads((tmp_path / "out.json").read_text())["demo"]["moses"][NAME]["scores"][3:] == [-10.0, -4.0]
