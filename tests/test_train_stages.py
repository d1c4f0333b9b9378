"""`cky train`'s input checks and single stages: cleaning as clean-corpus-n, the held-out dev set, the
tokenizer registry, and the one-line errors for bad input and missing tools."""
from __future__ import annotations

import pytest

from decoder.cli import main as cky_main
from decoder.data import tokenize as tokenize_module
from decoder.data.tokenize import DEFAULT_TOKENIZER, TOKENIZERS, tokenizer_for
from decoder.errors import InputError, MissingToolError, UsageError
from decoder.train.clean import CleanSettings, clean_corpus
from decoder.train.pipeline import TrainSettings, train
from decoder.train.split import MIN_DEV_PAIRS, held_out_positions, held_out_size
from train_corpus import write_corpus
from train_fakes import FAKES, write_lm


def test_clean_drops_each_kind_of_bad_pair_with_its_line(tmp_path):
    source_lines = [b"hola mundo", b"", b"uno " * 81, b"a", b"caf\xe9 malo", b"buenos   dias  ", b"x y"]
    target_lines = [b"hello world", b"empty source", b"one " * 81, b"a b c d e f g h i j", b"bad coffee",
                    b"good morning", b"x y z"]
    source, target = tmp_path / "c.es", tmp_path / "c.en"
    source.write_bytes(b"\n".join(source_lines) + b"\n")
    target.write_bytes(b"\n".join(target_lines))  # no newline at the end: still 7 lines
    out = {name: tmp_path / name for name in ("s", "t", "log")}
    counts = clean_corpus(source, target, out["s"], out["t"], out["log"], CleanSettings(), progress=False)
    assert counts["pairs_read"] == 7 and counts["pairs_kept"] == 3
    assert counts["dropped"] == {"invalid_utf8": 1, "empty": 1, "too_long": 1, "length_ratio": 1}
    assert out["s"].read_text(encoding="utf-8").splitlines() == ["hola mundo", "buenos dias", "x y"]
    assert out["t"].read_text(encoding="utf-8").splitlines() == ["hello world", "good morning", "x y z"]
    log = [line.split("\t") for line in out["log"].read_text(encoding="utf-8").splitlines()]
    assert [(number, reason) for number, reason, _ in log] == [
        ("2", "empty"), ("3", "too_long"), ("4", "length_ratio"), ("5", "invalid_utf8")]
    assert "source has 81 words (limit 80)" in log[1][2]


def test_held_out_dev_set_is_spread_evenly():
    assert held_out_size(300) == MIN_DEV_PAIRS and held_out_size(10**6) == 1000 and held_out_size(4000) == 200
    positions = held_out_positions(1000, 50)
    assert positions == list(range(10, 1000, 20))
    assert len(set(held_out_positions(101, 50))) == 50


def test_tokenizer_registry():
    assert tokenizer_for("en") is TOKENIZERS["en"] and tokenizer_for("es") is TOKENIZERS["es"]
    warnings = []
    default = tokenizer_for("ru", warn=warnings.append)
    assert default.name == DEFAULT_TOKENIZER
    assert len(warnings) == 1 and "'ru'" in warnings[0] and f"`{DEFAULT_TOKENIZER}`" in warnings[0]
    assert default.tokenize("Привет, «мир» (дом)!") == ["привет", ",", '"', "мир", '"', "-LRB-", "дом", "-RRB-", "!"]
    assert default.detokenize(["привет", ",", "мир", "!"]) == "Привет, мир!"
    assert tokenize_module.tokenize("Dios's", "es") == ["dios's"]  # no English clitic outside English


def test_tokenizing_on_processes_or_a_cluster_gives_the_same_lines(tmp_path):
    from decoder.train.tokenize import CHUNK, tokenize_lines

    source, _ = write_corpus(tmp_path, "corpus", 3 * CHUNK + 7, seed=5)
    lines = source.read_text(encoding="utf-8").splitlines()
    one = tokenize_lines(lines, "es", progress=False)
    assert len(one) == len(lines) and one[0] == " ".join(TOKENIZERS["es"].tokenize(lines[0]))
    assert tokenize_lines(lines, "es", workers=2, progress=False) == one
    pytest.importorskip("distributed")
    from decoder.cluster import connect

    with connect("local:2") as client:
        assert tokenize_lines(lines, "es", progress=False, client=client) == one


def corpus(tmp_path, pairs=200):
    directory = tmp_path / "in"
    directory.mkdir(exist_ok=True)
    source, target = write_corpus(directory, "corpus", pairs, seed=1)
    return source, target, write_lm(target, directory / "lm.arpa")


def test_different_line_counts_fail_before_any_work(tmp_path, capsys):
    source, target, _ = corpus(tmp_path)
    target.write_text("".join(target.read_text(encoding="utf-8").splitlines(keepends=True)[:-2]), encoding="utf-8")
    out = tmp_path / "sys"
    code = cky_main(["train", "--source", str(source), "--target", str(target), "--source-lang", "es",
                     "--target-lang", "en", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert str(source) in err[0] and str(target) in err[0] and "200 lines" in err[0] and "198" in err[0]
    assert not out.exists()


def test_a_corpus_without_pairs_is_one_line_before_the_parser_or_aligner(tmp_path, capsys):
    """An empty corpus, or one whose every pair cleaning drops, stops at the split with one line naming the
    cleaned file (the aligner would otherwise fail on empty input with a traceback)."""
    _, _, lm = corpus(tmp_path)
    for name, text in (("empty", ""), ("blank", "\n\n\n")):
        source, target = tmp_path / f"{name}.es", tmp_path / f"{name}.en"
        source.write_text(text, encoding="utf-8")
        target.write_text(text, encoding="utf-8")
        code = cky_main(["train", "--source", str(source), "--target", str(target), "--source-lang", "es",
                         "--target-lang", "en", "--lm", str(lm), "--no-tune", "--quiet", "--out",
                         str(tmp_path / f"sys-{name}")])
        err = [line for line in capsys.readouterr().err.strip().splitlines() if line.startswith("cky train:")]
        assert code == 1 and len(err) == 1 and "no sentence pairs left after cleaning" in err[0], err


def test_too_few_dev_pairs_is_an_error_unless_untuned(tmp_path, capsys):
    source, target, lm = corpus(tmp_path, pairs=90)
    out = tmp_path / "sys"
    arguments = ["train", "--source", str(source), "--target", str(target), "--source-lang", "es",
                 "--target-lang", "en", "--lm", str(lm), "--out", str(out)]
    assert cky_main(arguments) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--no-tune" in err[0] and "90 pairs" in err[0] and not out.exists()
    dev = write_corpus(tmp_path / "in", "dev", MIN_DEV_PAIRS - 1, seed=3)
    with pytest.raises(UsageError, match=f"{MIN_DEV_PAIRS - 1} dev pairs are too few to tune"):
        train(TrainSettings(source, target, "es", "en", out, dev=dev, lm=lm, progress=False))
    assert not out.exists()
    result = train(TrainSettings(source, target, "es", "en", out, lm=lm, tune=False, progress=False),
                   implementations=FAKES)
    assert result["sizes"]["train_pairs"] == 90 and result["sizes"]["dev_pairs"] is None


def test_unknown_source_language_uses_the_default_tokenizer_with_a_warning(tmp_path, capsys):
    source, target, lm = corpus(tmp_path)
    out = tmp_path / "sys"
    result = train(TrainSettings(source, target, "xx", "en", out, lm=lm, tune=False, progress=False),
                   implementations=FAKES)
    assert "'xx'" in capsys.readouterr().err
    assert result["tokenizers"] == {"source": DEFAULT_TOKENIZER, "target": "en",
                                   "versions": {DEFAULT_TOKENIZER: 1, "en": 1}}
    from decoder.config import load_config

    assert load_config(out / "config.toml").languages["source_tokenizer"] == DEFAULT_TOKENIZER


def test_a_missing_tool_is_one_line_naming_what_to_install(tmp_path, monkeypatch, capsys):
    from decoder.data import parse

    source, target, lm = corpus(tmp_path)
    monkeypatch.setattr(parse, "link_grammar_available", lambda: False)
    with pytest.raises(MissingToolError, match="python3-link-grammar"):
        train(TrainSettings(source, target, "es", "en", tmp_path / "sys", lm=lm, tune=False, progress=False))
    code = cky_main(["train", "--source", str(source), "--target", str(target), "--source-lang", "es",
                     "--target-lang", "en", "--lm", str(lm), "--no-tune", "--out", str(tmp_path / "sys")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "apt-get install" in err[0]


def test_a_missing_input_file_names_it(tmp_path):
    source, target, lm = corpus(tmp_path)
    with pytest.raises(InputError, match="nothere.en"):
        train(TrainSettings(source, target, "es", "en", tmp_path / "sys", test=(source, tmp_path / "nothere.en"),
                            lm=lm, tune=False, progress=False))


def test_a_target_language_without_a_parser_fails_before_any_work(tmp_path, capsys):
    source, target, lm = corpus(tmp_path)
    out = tmp_path / "sys"
    code = cky_main(["train", "--source", str(source), "--target", str(target), "--source-lang", "en",
                     "--target-lang", "de", "--lm", str(lm), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'de'" in err[0] and "link-grammar" in err[0]
    assert not out.exists()
