"""The Python API on bad arguments and bad input: worker counts, a truncated KenLM binary, a sentence
that is not valid Unicode."""
import pathlib
import shutil
import subprocess

import pytest

from conftest import write_toy_arpa
from test_decoder import decoder, model  # noqa: F401  (fixtures: the tiny system; decoder needs model)

from decoder.batch import translate_batch, translate_to_files
from decoder.errors import InputError
from decoder.lm import LanguageModel

REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("workers, error", [(-1, ValueError), (0, ValueError), ("2", TypeError), (2.7, TypeError),
                                            (None, TypeError), (True, TypeError), (2.0, TypeError)])
def test_bad_worker_counts_are_refused(decoder, tmp_path, workers, error):
    with pytest.raises(error, match="workers"):
        translate_batch(decoder, ["la casa"], workers=workers)
    with pytest.raises(error, match="workers"):
        decoder.translate_batch(["la casa"], workers=workers)
    out = tmp_path / "out.txt"
    with pytest.raises(error, match="workers"):
        translate_to_files(decoder, ["la casa"], {"out": str(out)}, lambda d, s: {"out": d.translate(s).text + "\n"},
                           workers=workers, progress=False)
    assert not out.exists()


def test_integer_worker_counts_still_work(decoder):
    import numpy as np

    expected = [decoder.translate(s).text for s in ["la casa", "el perro"]]
    for workers in (1, 2, np.int64(2)):
        assert [t.text for t in translate_batch(decoder, ["la casa", "el perro"], workers=workers)] == expected


def build_binary_tool():
    built = REPO / "models" / "kenlm" / "build" / "bin" / "build_binary"
    return str(built) if built.exists() else shutil.which("build_binary")


@pytest.mark.skipif(build_binary_tool() is None, reason="build_binary not built (bash models/kenlm/build_tools.sh)")
def test_a_truncated_lm_binary_names_our_file_not_kenlms_source(tmp_path):
    arpa = write_toy_arpa("trigram", tmp_path)
    binary = tmp_path / "lm.bin"
    subprocess.run([build_binary_tool(), str(arpa), str(binary)], check=True, capture_output=True)
    LanguageModel(str(binary))  # whole, it loads
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(binary.read_bytes()[:200])
    with pytest.raises(ValueError) as caught:
        LanguageModel(str(truncated))
    message = str(caught.value)
    assert message.startswith(f"cannot load language model {truncated}: Binary file has size 200 but the headers "
                              f"say it should be at least"), message
    assert ".cc:" not in message and "threw" not in message and "\n" not in message


def test_a_lone_surrogate_fails_its_line_only(decoder):
    sentences = ["la casa", "la \ud800 casa", "el perro"]
    with pytest.raises(InputError, match=r"the word '\\ud800' is not valid Unicode text \(a lone surrogate, U\+D800\)"):
        decoder.translate(sentences[1])
    results = translate_batch(decoder, sentences)
    assert [t.text for t in (results[0], results[2])] == [decoder.translate(s).text for s in (sentences[0], sentences[2])]
    assert results[1].error.startswith("InputError: the word '\\ud800' is not valid Unicode text"), results[1].error
    assert results[0].error is None and results[2].error is None
