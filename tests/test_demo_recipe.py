"""`cky demo` finds (or builds, through `cky data bible-es-en --small`) the system it runs."""

from decoder import demo


def test_demo_uses_a_finished_build_and_builds_a_missing_one(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(demo, "run_cky", lambda *arguments, log=None: calls.append(arguments))
    finished = tmp_path / "finished"
    finished.mkdir()
    (finished / "config.toml").write_text("", encoding="utf-8")
    assert demo.data_dir(str(finished)) == str(finished) and calls == []
    missing = tmp_path / "missing"
    assert demo.data_dir(str(missing)) == str(missing)
    assert calls == [("data", "bible-es-en", "--small", "--out", str(missing))]


def test_demo_default_is_the_small_build_without_a_full_one(tmp_path, monkeypatch):
    import decoder.data.build as build

    clone = tmp_path / "clone"
    (clone / "models" / "bible-es-en").mkdir(parents=True)
    monkeypatch.setattr(build, "PACKAGE_PARENT", clone)
    calls = []
    monkeypatch.setattr(demo, "run_cky", lambda *arguments, log=None: calls.append(arguments))
    small = clone / "models" / "bible-es-en" / "build" / "small"
    assert demo.data_dir() == str(small) and calls == [("data", "bible-es-en", "--small")]
    full = small.parent
    full.mkdir(parents=True)
    for name in ("config.toml", "manifest.json"):
        (full / name).write_text("", encoding="utf-8")
    calls.clear()
    assert demo.data_dir() == str(full) and calls == []


def test_raw_examples_are_tokenized_and_detokenized():
    class Echo:  # a decoder that returns its tokenized input
        def translate(self, words):
            return type("T", (), {"text": " ".join(words)})()

    # lowercased and split by the es tokenizer, spaced and capitalized again by the en detokenizer
    assert demo.translate_raw(Echo(), ["EL Hombre,bueno (Dijo)."], "es", "en") == ["El hombre, bueno (dijo)."]
