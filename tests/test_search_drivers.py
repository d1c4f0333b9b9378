"""The `search` setting picks the search driver: Decoder, reconfigure and `cky translate --search`."""
import subprocess
import sys

import pytest

from decoder.decoder import Decoder
from decoder.errors import SettingsError
from decoder.search.drivers import SEARCH_DRIVERS, search_driver
from decoder.settings import SEARCH_ALGORITHMS
from test_decoder import model  # noqa: F401  (the toy model fixture)

SENTENCES = ["la casa verde es pequeña", "el perro es verde", "la casa", "un perro verde"]


def test_every_algorithm_has_a_driver_that_says_its_name():
    assert set(SEARCH_DRIVERS) <= set(SEARCH_ALGORITHMS)
    for name in SEARCH_DRIVERS:
        assert search_driver(name).algorithm == name


def test_unpruned_incremental_search_finds_the_cube_optimum(model):  # noqa: F811
    # With no pop limit both fill the exhaustive chart: the same best derivation.
    cube = Decoder.from_config(model / "config.toml", pop_limit=0)
    incremental = Decoder.from_config(model / "config.toml", pop_limit=0, search="incremental")
    assert incremental.chart.algorithm == "incremental" and cube.chart.algorithm == "cube"
    for sentence in SENTENCES:
        a, b = cube.translate(sentence), incremental.translate(sentence)
        assert b.score == pytest.approx(a.score, abs=1e-4) and b.text == a.text
        assert "partial_edges_popped" in b.stats and "partial_edges_popped" not in a.stats


def test_reconfigure_switches_the_driver_and_back(model):  # noqa: F811
    decoder = Decoder.from_config(model / "config.toml", pop_limit=0)
    before = decoder.translate(SENTENCES[0])
    decoder.reconfigure(search="incremental")
    assert decoder.chart.algorithm == "incremental" and decoder.settings["search"] == "incremental"
    assert decoder.translate(SENTENCES[0]).score == pytest.approx(before.score, abs=1e-4)
    decoder.reconfigure(search="cube", pop_limit=5)
    assert decoder.chart.algorithm == "cube" and decoder.search_settings.pop_limit == 5


def test_an_unknown_algorithm_is_refused(model):  # noqa: F811
    with pytest.raises(SettingsError, match="no-such-search"):
        Decoder(model / "store", model / "lm.arpa", search="no-such-search")


def test_cli_search_flag(model, tmp_path):  # noqa: F811
    source = tmp_path / "in.txt"
    source.write_text("\n".join(SENTENCES) + "\n")
    outputs = {}
    for search in ("cube", "incremental"):
        done = subprocess.run([sys.executable, "-m", "decoder.cli", "translate", "--config", str(model / "config.toml"),
                               "--pop-limit", "0", "--search", search, "--input", str(source), "--quiet"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs[search] = done.stdout.splitlines()
    assert len(outputs["cube"]) == len(SENTENCES) and outputs["incremental"] == outputs["cube"]
    done = subprocess.run([sys.executable, "-m", "decoder.cli", "translate", "--config", str(model / "config.toml"),
                           "--search", "nonsense", "--input", str(source)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--search" in done.stderr


def test_cli_table_limit_and_rule_order_flags(model, tmp_path):  # noqa: F811
    # "casa" has two rules (house, home): a table limit of 1 keeps only the better one.
    source = tmp_path / "in.txt"
    source.write_text("casa\n")
    kbest = tmp_path / "kbest.txt"
    base = [sys.executable, "-m", "decoder.cli", "translate", "--config", str(model / "config.toml"),
            "--input", str(source), "--quiet", "--kbest", "5", "--kbest-out", str(kbest)]

    def outputs(*flags):
        done = subprocess.run(base + list(flags), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return {line.split(" ||| ")[1] for line in kbest.read_text().splitlines()}

    assert {"house", "home"} <= outputs("--table-limit", "0", "--experimental", "rule_order=score")
    limited = outputs("--table-limit", "1", "--experimental", "rule_order=estimate")
    assert "house" in limited and "home" not in limited
    done = subprocess.run(base + ["--table-limit", "-1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--table-limit" in done.stderr
