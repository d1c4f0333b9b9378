"""Raw text in, readable text out (decoder.text): a config that records its languages takes raw
text through the API, `cky translate` and `cky serve`, and gives detokenized, recased text, with
the tokens, the tokenized source and the unknown words beside it; `tokenized=True` /
`--pretokenized` and a config without languages give the tokenized output as before. The system
is the hand-written Genesis 1:1 grammar of the viewer's tests; the answers are worked out by hand
from its rules and the recasing model trained here. `cky train`'s recase and evaluate stages are
checked on a small trained system (parse and align stand-ins, tests/train_fakes.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_fixtures import run_cky
from decoder.decoder import Decoder
from decoder.errors import ConfigError
from decoder.recase import RecaseModel
from serve_fixtures import TRANSLATION, VERSE, write_genesis_model

RAW_VERSE = "En el principio creó Dios los cielos y la tierra."
RAW_TRANSLATION = "In the beginning God created the heavens and the earth."
# "Zebedeo" is not in the grammar: passed through, it keeps the input's capital.
RAW_UNKNOWN = "En el principio creó Zebedeo la tierra."
UNKNOWN_TOKENS = "in the beginning created zebedeo the earth ."
UNKNOWN_TRANSLATION = "In the beginning created Zebedeo the earth."
LANGUAGES = ('[languages]\nsource_language = "es"\ntarget_language = "en"\nsource_tokenizer = "es"\n'
             'target_tokenizer = "en"\n\n')


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    """{"plain": the config without languages, "raw": the same system with [languages] and a recasing
    model that knows "God" (trained on the cased English verse)}."""
    directory = tmp_path_factory.mktemp("genesis")
    plain = Path(write_genesis_model(directory))
    RecaseModel.train([RAW_TRANSLATION.replace(".", " .").split()]).save(directory / "recase.gz")
    raw = directory / "raw.toml"
    raw.write_text(plain.read_text().replace("[weights]", f'recase_model = "recase.gz"\n\n{LANGUAGES}[weights]'))
    return {"plain": plain, "raw": raw}


@pytest.fixture(scope="module")
def decoders(system):
    return {name: Decoder.from_config(path) for name, path in system.items()}


def test_raw_text_in_gives_detokenized_recased_text_and_the_tokens(decoders):
    t = decoders["raw"].translate(RAW_VERSE)
    assert t.text == RAW_TRANSLATION  # "God" from the recasing model, the period attached
    assert t.tokens == TRANSLATION and t.source_tokens == VERSE
    assert t.source == RAW_VERSE and t.unknown_words == []
    # the tree and features are those of the tokenized sentence's translation
    tokenized = decoders["plain"].translate(VERSE)
    assert t.tree == tokenized.tree and t.features == tokenized.features and t.score == tokenized.score


def test_unknown_words_are_listed_and_keep_their_input_casing(decoders):
    t = decoders["raw"].translate(RAW_UNKNOWN)
    assert t.tokens == UNKNOWN_TOKENS and t.text == UNKNOWN_TRANSLATION
    assert t.unknown_words == ["zebedeo"] and t.features["oov"] == 1
    # a config without languages lists them too (as the grammar reads them)
    assert decoders["plain"].translate("zebedeo y zebedeo").unknown_words == ["zebedeo", "zebedeo"]


def test_tokenized_input_gives_todays_output(decoders):
    raw, plain = decoders["raw"], decoders["plain"]
    for sentence in (VERSE, "en el principio creó zebedeo la tierra ."):
        expected = plain.translate(sentence)
        for t in (raw.translate(sentence, tokenized=True), raw.translate(sentence.split())):
            assert (t.text, t.tokens, t.source, t.tree) == (expected.text, expected.text, sentence, expected.tree)
    assert raw.translate(VERSE, tokenized=True).text == TRANSLATION
    # tokenized text is not tokenized again: "-LRB-" would become "- lrb -"
    assert raw.translate("-LRB- dios -RRB-", tokenized=True).source_tokens == "-LRB- dios -RRB-"
    assert raw.translate("(Dios)").source_tokens == "-LRB- dios -RRB-"


def test_kbest_and_translate_batch_take_raw_text_too(decoders):
    raw = decoders["raw"]
    kbest = raw.kbest(RAW_VERSE, 2)
    assert [t.text for t in kbest] == [RAW_TRANSLATION, "In the start God created the heavens and the earth."]
    assert [t.tokens for t in kbest] == [t.text for t in decoders["plain"].kbest(VERSE, 2)]
    assert [t.text for t in raw.kbest(VERSE, 2, tokenized=True)] == [t.tokens for t in kbest]
    for workers in (1, 2):
        batch = raw.translate_batch([RAW_VERSE, "", RAW_UNKNOWN], workers=workers)
        assert [t.text for t in batch] == [RAW_TRANSLATION, "", UNKNOWN_TRANSLATION]
        assert batch[2].unknown_words == ["zebedeo"]
    assert [t.text for t in raw.translate_batch([VERSE], tokenized=True)] == [TRANSLATION]
    with pytest.raises(TypeError, match="tokenized"):
        raw.translate(RAW_VERSE, tokenized="yes")


def test_a_config_without_languages_is_unchanged(decoders, system):
    plain = decoders["plain"]
    assert not plain.text.raw
    t = plain.translate(RAW_VERSE)  # not tokenized: "En", "Dios" and "tierra." are unknown words
    assert t.text == t.tokens and t.source == t.source_tokens == RAW_VERSE
    assert t.unknown_words == ["En", "Dios", "tierra."]
    code, out, err = run_cky(["translate", "--config", str(system["plain"]), "--quiet"], f"{VERSE}\n".encode())
    assert code == 0 and out == f"{TRANSLATION}\n".encode()


def test_cky_translate_raw_text_one_line_per_line_and_unknown_words_counted(system, tmp_path):
    lines = [RAW_VERSE, "", RAW_UNKNOWN, "Zebedeo y Zebedeo."]
    kbest = tmp_path / "kbest.txt"
    code, out, err = run_cky(["translate", "--config", str(system["raw"]), "--kbest", "1", "--kbest-out", str(kbest)],
                             ("\n".join(lines) + "\n").encode())
    assert code == 0, err
    assert out.decode().split("\n") == [RAW_TRANSLATION, "", UNKNOWN_TRANSLATION, "Zebedeo and Zebedeo.", ""]
    assert "3 unknown words in 2 of 4 lines" in err and "most frequent: zebedeo (3)" in err
    # the k-best list stays tokenized
    assert kbest.read_text().splitlines()[0].startswith(f"0 ||| {TRANSLATION} |||")
    code, out, err = run_cky(["translate", "--config", str(system["raw"]), "--quiet"], f"{RAW_UNKNOWN}\n".encode())
    assert out.decode() == UNKNOWN_TRANSLATION + "\n" and "unknown" not in err
    # the same through an output file (the resumable writer), on two processes
    output = tmp_path / "out.txt"
    code, out, err = run_cky(["translate", "--config", str(system["raw"]), "--output", str(output), "--workers", "2"],
                             ("\n".join(lines) + "\n").encode())
    assert code == 0, err
    assert output.read_text().split("\n") == [RAW_TRANSLATION, "", UNKNOWN_TRANSLATION, "Zebedeo and Zebedeo.", ""]
    assert "3 unknown words in 2 of 4 lines" in err


def test_cky_translate_pretokenized_gives_the_tokenized_output(system):
    given = f"{VERSE}\nen el principio creó zebedeo la tierra .\n".encode()
    _, plain, _ = run_cky(["translate", "--config", str(system["plain"]), "--quiet"], given)
    code, out, err = run_cky(["translate", "--config", str(system["raw"]), "--pretokenized", "--quiet"], given)
    assert code == 0 and out == plain == f"{TRANSLATION}\n{UNKNOWN_TOKENS}\n".encode()
    # --tokenize is for tokenized text: with a raw-text config it is a usage error before any decoding
    code, out, err = run_cky(["translate", "--config", str(system["raw"]), "--tokenize", "es"], b"x\n")
    assert code == 2 and "records its languages" in err and out == b""


def test_a_missing_recasing_model_is_a_config_error_naming_the_key(system, tmp_path):
    broken = system["raw"].parent / "broken.toml"
    broken.write_text(system["raw"].read_text().replace('"recase.gz"', f'"{tmp_path / "none.gz"}"'))
    with pytest.raises(ConfigError, match="`recase_model`: .*cannot read the recasing model"):
        Decoder.from_config(broken)
    unknown = system["raw"].parent / "tokenizer.toml"
    unknown.write_text(system["raw"].read_text().replace('source_tokenizer = "es"', 'source_tokenizer = "xx"'))
    with pytest.raises(ConfigError, match="source_tokenizer"):
        Decoder.from_config(unknown)


def test_serve_answers_raw_text_and_marks_unknown_words(decoders):
    pytest.importorskip("starlette")
    from decoder.serve import create_app
    from test_serve import local_client, post

    with local_client(create_app(decoders["raw"])) as client:
        answer = post(client, {"sentence": RAW_UNKNOWN, "kbest": 2}).json()
        assert answer["text"] == UNKNOWN_TRANSLATION and answer["tokens"] == UNKNOWN_TOKENS
        assert answer["source"] == RAW_UNKNOWN and answer["unknown_words"] == ["zebedeo"]
        assert answer["kbest"][0]["text"] == UNKNOWN_TRANSLATION
        assert client.get("/health").json()["raw_text"] is True
    with local_client(create_app(decoders["plain"])) as client:
        answer = post(client, {"sentence": VERSE}).json()
        assert answer["text"] == answer["tokens"] == TRANSLATION and answer["unknown_words"] == []


def test_cky_evaluate_reports_sacrebleu_on_raw_references_too(tmp_path):
    (tmp_path / "hyp.tok").write_text("in the beginning god created the earth .\n")
    (tmp_path / "ref.tok").write_text("in the beginning god created the earth .\n")
    (tmp_path / "hyp.txt").write_text("In the beginning god created the earth.\n")
    (tmp_path / "ref.txt").write_text("In the beginning God created the earth.\n")
    code, out, err = run_cky(["evaluate", "--hyp", str(tmp_path / "hyp.tok"), "--ref", str(tmp_path / "ref.tok"),
                              "--tokenize", "none", "--lowercase", "--text-hyp", str(tmp_path / "hyp.txt"),
                              "--raw-ref", str(tmp_path / "ref.txt"), "--json"])
    assert code == 0, err
    result = json.loads(out)
    assert result["bleu"] == pytest.approx(100.0)
    # cased: "god" against "God" loses one of 8 unigrams (13a splits the period off)
    assert result["sacrebleu"]["precisions"][0] == pytest.approx(100 * 7 / 8)
    assert "case:mixed" in result["sacrebleu"]["bleu_signature"]


def test_cky_train_records_a_recasing_model_and_reports_both_scores(tmp_path):
    from decoder.train.pipeline import TrainSettings, train
    from train_corpus import write_corpus
    from train_fakes import FAKES, write_lm

    source, target = write_corpus(tmp_path, "corpus", 200, seed=1)
    test = write_corpus(tmp_path, "test", 20, seed=2)
    out = tmp_path / "sys"
    described = train(TrainSettings(source=source, target=target, source_lang="es", target_lang="en", out=out,
                                    test=test, lm=write_lm(target, tmp_path / "lm.arpa"), tune=False,
                                    progress=False), implementations=FAKES)
    assert "recase" in described["ran"]
    config = (out / "config.toml").read_text()
    assert 'recase_model = "recase.gz"' in config
    model = RecaseModel.load(out / "recase.gz")
    assert model.recase(["john", "loves", "mary", "."]) == ["John", "loves", "Mary", "."]
    scores = described["scores"]
    assert {"test_bleu", "test_sacrebleu"} <= set(scores)
    # the readable test output is what the trained system gives for the raw test source
    decoder = Decoder.from_config(out / "config.toml")
    raw = test[0].read_text(encoding="utf-8").splitlines()
    detok = (out / "test.detok").read_text(encoding="utf-8").splitlines()
    assert [t.text for t in decoder.translate_batch(raw)] == detok
    assert any(name in line for line in detok for name in ("John", "Mary", "Peter"))
    assert (out / "test.out").read_text(encoding="utf-8").splitlines() == [t.tokens for t in
                                                                          decoder.translate_batch(raw)]
