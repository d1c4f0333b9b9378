"""`cky translate --tokenize LANG --detokenize LANG`: raw text in, readable text out, with the corpus's own
tokenizer (decoder.data.tokenize), one output line per input line as always (a resumed run must give the same flags: test_translate_cli_errors)."""
import pytest

from cli_fixtures import run_cky
from decoder.data.tokenize import detokenize, tokenize
from test_decoder import decoder, model  # noqa: F401  (fixtures: the tiny system)
from test_translate_cli_errors import translate_args

RAW = ["La casa verde, es pequeña.", "«El perro»", "", "UN  PERRO\tES VERDE!", "la casa"]


def lines_of(out: bytes) -> list[str]:
    assert out == b"" or out.endswith(b"\n")
    return out.decode("utf-8").split("\n")[:-1]


def test_tokenize_decodes_each_line_as_its_tokenized_lowercased_text(model, decoder):
    code, out, _ = run_cky(translate_args(model, "--tokenize", "es"), "\n".join(RAW).encode() + b"\n")
    assert code == 0
    expected = [decoder.translate(" ".join(tokenize(line, "es"))).text for line in RAW]
    assert lines_of(out) == expected
    # the independent check that tokenizing did something: the raw first line decodes differently
    assert decoder.translate(RAW[0]).text != expected[0]


def test_detokenize_writes_the_tokenized_translation_as_text_and_keeps_the_kbest_list_tokenized(model, tmp_path):
    source = tmp_path / "in.es"
    source.write_bytes("\n".join(RAW).encode() + b"\n\xff bad\n")
    kbest = tmp_path / "kbest.txt"
    code, tokenized, _ = run_cky(translate_args(model, "--tokenize", "es", "--input", str(source)))
    assert code == 1  # the line that is not UTF-8
    code, text, _ = run_cky(translate_args(model, "--tokenize", "es", "--detokenize", "en", "--input", str(source),
                                             "--kbest", "1", "--kbest-out", str(kbest)))
    assert code == 1
    assert lines_of(text) == [detokenize(line.split(), "en") for line in lines_of(tokenized)]
    assert len(lines_of(text)) == len(RAW) + 1 and lines_of(text)[2] == "" and lines_of(text)[5] == ""
    assert lines_of(text)[0][:1].isupper() and lines_of(text) != lines_of(tokenized)
    best = [line.split(" ||| ")[1] for line in kbest.read_text(encoding="utf-8").splitlines()]
    assert best == lines_of(tokenized)


@pytest.mark.parametrize("flag", ["--tokenize", "--detokenize"])
def test_an_unknown_language_is_a_usage_error(model, flag, capsys):
    from decoder.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser("translate").parse_args(translate_args(model, flag, "fr"))
    assert stop.value.code == 2 and f"argument {flag}: invalid choice: 'fr'" in capsys.readouterr().err
