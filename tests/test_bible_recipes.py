"""The Bible recipes (decoder.data.build): raw parallel files from a tiny fake Bible (the SWORD dump
monkeypatched), the split sizes, the call of the `cky train` pipeline, and where builds go by default."""
import json

import pytest

from decoder.data import bible, build, split

SPANISH_WORDS = ["uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve"]
ENGLISH_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def fake_imp(words, chapters, verses_per_chapter, extra_book=None):
    """An IMP dump: verse v of chapter c has (c + v) % 7 + 2 words, so the two sides' lengths correlate."""
    lines = ["$$$[ Module Heading ]"]
    books = [("Genesis", chapters)] + ([(extra_book, 1)] if extra_book else [])
    for book, count in books:
        for chapter in range(1, count + 1):
            for verse in range(1, verses_per_chapter + 1):
                n = (chapter + verse) % 7 + 2
                lines.append(f"$$${book} {chapter}:{verse}")
                text = " ".join(words[(verse + k) % len(words)] for k in range(n))
                if book == "Genesis" and chapter == 2 and verse == 3 and words is SPANISH_WORDS:
                    lines.append("<w></w>")                    # empty on one side: dropped
                    continue
                lines.append(f"<w>{text.capitalize()}</w> (x).")
    return "\n".join(lines) + "\n"


@pytest.fixture
def fake_sword(monkeypatch):
    dumps = {bible.SPANISH_MODULE: fake_imp(SPANISH_WORDS, 6, 20),
             bible.ENGLISH_MODULE: fake_imp(ENGLISH_WORDS, 6, 20, extra_book="Tobit")}
    monkeypatch.setattr(bible, "dump_module", lambda module: dumps[module])
    monkeypatch.setattr(bible, "module_version", lambda module: "test")


def test_es_en_raw_files_and_split(tmp_path, fake_sword):
    corpus = build.es_en_corpus(tmp_path / "cache")
    assert corpus.statistics["shared_references"] == 120
    assert corpus.statistics["dropped"] == {"shifted_chapter": 0, "empty": 1, "length_ratio": 0}
    assert len(corpus.pairs) == 119
    sizes = build.write_raw(tmp_path, build.RECIPES["bible-es-en"], corpus, small=False)
    # position i: test when i % 50 == 0, dev when i % 50 == 25 (i < 30000): 0, 50, 100 and 25, 75
    assert sizes["full"] == {"train": 114, "dev": 2, "test": 3}
    raw = tmp_path / "raw"
    test_es = (raw / "test.es").read_text(encoding="utf-8").splitlines()
    test_ids = (raw / "test.ids").read_text(encoding="utf-8").splitlines()
    # (Genesis 2:3 is dropped, so Genesis 3 starts at position 39)
    assert test_ids == [corpus.pairs[i].reference for i in (0, 50, 100)] == ["Genesis 1:1", "Genesis 3:12",
                                                                               "Genesis 6:2"]
    assert test_es[0] == "Dos tres cuatro cinco (x)."                  # raw text: cased, untokenized
    assert (raw / "test.en").read_text(encoding="utf-8").splitlines()[0] == "Two three four five (x)."
    train = (raw / "train.es").read_text(encoding="utf-8").splitlines()
    assert len(train) == len((raw / "train.en").read_text(encoding="utf-8").splitlines()) == 114
    assert len((raw / "lm-extra.en").read_text(encoding="utf-8").splitlines()) == 20   # Tobit only


def test_small_keeps_the_first_training_verses(tmp_path, fake_sword):
    corpus = build.es_en_corpus(tmp_path / "cache")
    sizes = build.write_raw(tmp_path, build.RECIPES["bible-es-en"], corpus, small=True, small_train_verses=10)
    assert {name: sizes[name]["verses"] for name in ("train", "dev", "test")} == {"train": 10, "dev": 2, "test": 3}
    ids = (tmp_path / "raw" / "train.ids").read_text(encoding="utf-8").splitlines()
    expected = [corpus.pairs[i].reference for i in split.split_positions(len(corpus.pairs))["train"][:10]]
    assert ids == expected and "Genesis 1:1" not in ids


def test_build_trains_on_the_raw_files_with_the_recipe_split(tmp_path, fake_sword, monkeypatch):
    import decoder.train.pipeline as pipeline

    seen = {}

    def fake_train(settings, from_stage=None):
        seen["settings"] = settings
        corpus = settings.out / "corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        for name in ("train.tok.src", "train.tok.tgt", "train.trees", "train.align", "dev.tok.src",
                     "dev.tok.tgt", "test.tok.src", "test.tok.tgt"):
            (corpus / name).write_text("x\n", encoding="utf-8")
        return {"scores": {"test_bleu": 1.0}}

    monkeypatch.setattr(pipeline, "train", fake_train)
    monkeypatch.setattr(build.requirements, "ensure_debian_packages", lambda packages: [])
    monkeypatch.setattr(build.requirements, "ensure_pip_package", lambda *a, **k: None)
    content = build.build("bible-es-en", tmp_path / "out", small=False, workers=1)
    settings = seen["settings"]
    raw = (tmp_path / "out" / "raw").resolve()
    assert (settings.source, settings.target) == (raw / "train.es", raw / "train.en")
    assert settings.dev == (raw / "dev.es", raw / "dev.en") and settings.test == (raw / "test.es", raw / "test.en")
    assert settings.lm_text == [raw / "lm-extra.en"] and (settings.source_lang, settings.target_lang) == ("es", "en")
    assert settings.parse_cache == build.shared_parse_cache()   # shared with the other recipe's builds
    assert content["split"]["test"]["verses"] == 3 and content["system"]["scores"] == {"test_bleu": 1.0}
    out = tmp_path / "out"
    assert (out / "test.es").resolve() == (out / "corpus" / "test.tok.src").resolve()   # the earlier layout
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["name"] == "bible-es-en"


def test_default_out_inside_a_clone_and_installed(tmp_path, monkeypatch):
    clone = tmp_path / "clone"
    (clone / "models" / "bible-es-en").mkdir(parents=True)
    monkeypatch.setattr(build, "PACKAGE_PARENT", clone)
    assert build.default_out("bible-zh-en") == clone / "models" / "bible-zh-en" / "build"
    assert build.default_out("bible-es-en", small=True) == clone / "models" / "bible-es-en" / "build" / "small"
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(build, "PACKAGE_PARENT", site)
    monkeypatch.setenv("CKY_DATA", str(tmp_path / "data"))
    assert build.default_out("bible-es-en", small=True) == tmp_path / "data" / "bible-es-en" / "small"
    monkeypatch.delenv("CKY_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert build.default_out("bible-zh-en") == tmp_path / "home" / ".cache" / "cky-decoder" / "bible-zh-en"


def test_given_weights_replace_tuning_in_the_config(tmp_path):
    from decoder.train.tune import tune_system
    from decoder.tune.config import read_config

    weights = {"lm": 1.5, "word_count": -0.25}
    statistics = tune_system(tmp_path / "config.toml", tmp_path, tmp_path / "store", "lm.bin", 5,
                             {"source_language": "es"}, None, None, tmp_path / "work", tmp_path / "cache", 1, 1, 1,
                             weights=weights)
    assert statistics == {"tuned": False, "weights": weights}
    assert read_config(str(tmp_path / "config.toml"))["weights"] == weights


def test_small_build_uses_the_shipped_weights(tmp_path, monkeypatch):
    import argparse

    from decoder.cli import data as cli_data

    seen = {}
    monkeypatch.setattr(build, "build", lambda *a, **k: seen.update(k))
    parser = argparse.ArgumentParser()
    cli_data.add_arguments(parser)
    cli_data.main(parser.parse_args(["bible-es-en", "--small", "--out", str(tmp_path)]))
    shipped = build.shipped_weights("bible-es-en-small")
    assert shipped is not None and seen["weights"] == shipped
    assert build.read_weights(shipped)["lm"] > 0
    cli_data.main(parser.parse_args(["bible-es-en", "--small", "--tune", "--out", str(tmp_path)]))
    assert seen["weights"] is None and seen["tune"] is True
    cli_data.main(parser.parse_args(["bible-zh-en", "--small", "--out", str(tmp_path)]))
    assert seen["weights"] is None                       # no shipped weights: MERT


def test_weights_file_without_a_weights_table_is_a_config_error(tmp_path):
    from decoder.errors import ConfigError

    path = tmp_path / "w.toml"
    path.write_text("store = 'x'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"w\.toml: has no \[weights\] table"):
        build.read_weights(path)
