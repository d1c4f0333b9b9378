"""`cky train` end to end with the real parser, aligner and LM tools (link-grammar, eflomal, KenLM;
.ci/run installs them): a generated Spanish-English corpus of raw text (train_corpus.py) to a tuned
system, which then translates raw sentences through the command line and the Python API.

The generated language is small and regular, so the system translates new combinations of its
words nearly as the generator would (the expected outputs below). Not always exactly: eflomal
seeds its sampler from the clock, so each fresh run aligns a little differently."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from decoder.config import load_config
from decoder.data.tokenize import TOKENIZERS
from decoder.train.pipeline import STAGES
from train_corpus import write_corpus

REPOSITORY = Path(__file__).resolve().parents[1]
# raw sentences none of which is a line of the corpus, and their translations
SENTENCES = {
    "El rey viejo ama el pan.": "The old king loves the bread.",
    "María abre la puerta en la casa, y el perro come el libro.":
        "Mary opens the door in the house, and the dog eats the book.",
    "La reina encuentra el agua hoy.": "The queen finds the water today.",
}


def missing_tools() -> str | None:
    from decoder.errors import MissingToolError
    from decoder.train.requirements import check_tools

    try:
        check_tools(["parse", "align", "lm"])
    except MissingToolError as error:
        return str(error)
    return None


MISSING = missing_tools()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


def check_translations(outputs: list[str]) -> None:
    """One detokenized sentence per input (a capital first, the full stop attached, no spaces before
    punctuation), together at least 80% of the expected words, in their places."""
    assert len(outputs) == len(SENTENCES)
    matched = total = 0
    for output, expected in zip(outputs, SENTENCES.values()):
        assert output[:1].isupper() and output.endswith(".") and " ." not in output and " ," not in output, output
        words, expected_words = output.split(), expected.split()
        matched += sum(a == b for a, b in zip(words, expected_words))
        total += len(expected_words)
    assert matched >= 0.8 * total, (outputs, list(SENTENCES.values()))


def cky(*arguments, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "decoder.cli", *map(str, arguments)], input=stdin,
                          capture_output=True, text=True, cwd=REPOSITORY, timeout=600)


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    work = tmp_path_factory.mktemp("train")
    source, target = write_corpus(work, "corpus", 300, seed=1)
    test = write_corpus(work, "test", 30, seed=2)
    for sentence in SENTENCES:
        assert sentence not in source.read_text(encoding="utf-8").splitlines()
    out = work / "system"
    command = ["train", "--source", source, "--target", target, "--source-lang", "es", "--target-lang", "en",
               "--test", *test, "--out", out, "--workers", "2", "--mert-iterations", "2", "--mert-kbest", "20",
               "--quiet"]
    result = cky(*command)
    assert result.returncode == 0, result.stderr[-3000:]
    return {"out": out, "command": command, "stdout": result.stdout, "source": source, "target": target}


def test_the_system_translates_raw_text_through_the_command_line(system):
    config = system["out"] / "config.toml"
    assert f"config: {config}" in system["stdout"]
    # the config records its languages: raw text in, detokenized and recased text out, by default
    result = cky("translate", "--config", config, stdin="".join(sentence + "\n" for sentence in SENTENCES))
    assert result.returncode == 0, result.stderr
    check_translations(result.stdout.splitlines())
    system["cli_outputs"] = result.stdout.splitlines()


def test_the_system_translates_raw_text_through_the_api(system):
    from decoder.decoder import Decoder

    config = system["out"] / "config.toml"
    languages = load_config(config).languages
    assert languages == {"source_language": "es", "target_language": "en", "source_tokenizer": "es",
                         "target_tokenizer": "en"}
    source = TOKENIZERS[languages["source_tokenizer"]]
    decoder = Decoder.from_config(config)
    translations = [decoder.translate(sentence) for sentence in SENTENCES]
    outputs = [t.text for t in translations]
    check_translations(outputs)
    # the tokens are those of the tokenized sentence, decoded as such
    for sentence, t in zip(SENTENCES, translations):
        tokenized = " ".join(source.tokenize(sentence))
        assert t.source_tokens == tokenized and t.tokens == decoder.translate(tokenized, tokenized=True).text
    if "cli_outputs" in system:
        assert outputs == system["cli_outputs"]  # the same system either way
    # the GHKM system searches incrementally over the rest-cost binary of its LM (GHKM_SEARCH) ...
    assert decoder.search_settings.search == "incremental"
    assert decoder.lm.kind == "rest_probing" and Path(decoder.lm.path).name == "lm.rest.bin"
    # ... which scores a complete translation as lm.bin does
    from decoder.lm import LanguageModel

    probing = LanguageModel(system["out"] / "lm.bin")
    for t in translations:
        assert decoder.lm.score_sentence(t.tokens.split()) == pytest.approx(probing.score_sentence(t.tokens.split()),
                                                                            abs=1e-4)


def test_system_json_describes_the_system(system):
    out = system["out"]
    described = json.loads((out / "system.json").read_text(encoding="utf-8"))
    assert described["languages"] == {"source": "es", "target": "en"}
    assert described["search"] == "incremental" and described["lm"]["rest_costs"] == "lm.rest.bin"
    assert described["tokenizers"] == {"source": "es", "target": "en", "versions": {"es": 1, "en": 1}}
    assert list(described["stages"]) == list(STAGES)
    assert all(stage["seconds"] >= 0 for stage in described["stages"].values())
    for role, path in (("source", system["source"]), ("target", system["target"])):
        assert described["inputs"][role]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert described["inputs"][role]["lines"] == 300
    sizes = described["sizes"]
    assert (sizes["corpus_pairs"], sizes["clean_pairs"], sizes["train_pairs"], sizes["dev_pairs"],
            sizes["test_pairs"]) == (300, 300, 250, 50, 30)
    assert sizes["dev_held_out"] and sizes["rules"] > 0
    assert described["tuned"] and described["scores"]["test_bleu"] > 50 and described["scores"]["test_chrf"] > 50
    # and sacreBLEU's default: the recased, detokenized test output against the raw references
    assert described["scores"]["test_sacrebleu"] > 50
    test_out = (out / "test.out").read_text(encoding="utf-8").splitlines()
    assert len(test_out) == 30 and len((out / "test.detok").read_text(encoding="utf-8").splitlines()) == 30


def test_the_same_command_again_runs_nothing(system):
    before = (system["out"] / "system.json").read_bytes()
    result = cky(*system["command"])
    assert result.returncode == 0, result.stderr
    assert "stages run: none" in result.stdout
    assert (system["out"] / "system.json").read_bytes() == before


def test_the_lm_learns_from_more_target_text(tmp_path):
    from decoder.data.lm_build import perplexity
    from decoder.train.lm import build_lm

    train_text, more = tmp_path / "train.tok.en", tmp_path / "more.en"
    train_text.write_text("the king sees the house .\nthe queen eats the bread .\n", encoding="utf-8")
    more.write_text("The Horse runs.\n\nThe horse runs.\n", encoding="utf-8")  # raw: tokenized here
    statistics = build_lm(train_text, [more], "en", tmp_path / "lm.bin", tmp_path, order=3)
    assert statistics["training_sentences"] == 4 and statistics["training_tokens"] == 20
    probe = tmp_path / "probe.en"
    probe.write_text("the horse sees the king .\nthe Horse\n", encoding="utf-8")
    assert perplexity(tmp_path / "lm.bin", probe)["oovs"] == 1  # "Horse": the extra text was lowercased
