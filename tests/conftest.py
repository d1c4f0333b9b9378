"""Fixtures shared by the tests: one home for the hand-written toy language models.

    def test_something(toy_arpa):            # a session-wide file, written once
        lm = LanguageModel(toy_arpa("trigram"))
    write_toy_arpa("decoder", directory)     # a copy in a directory of your own (module fixtures)

Each model is tiny and written by hand, so that a test can check a score by hand.
"""
from __future__ import annotations

import pathlib

import pytest

# name -> ARPA text
TOY_ARPA = {}

# test_lm: a trigram with backoffs and <unk>; test_lm checks scores computed by hand from it.
TOY_ARPA["trigram"] = """\
\\data\\
ngram 1=8
ngram 2=9
ngram 3=4

\\1-grams:
-99\t<s>\t-0.6
-1.2\t</s>
-1.5\t<unk>
-0.9\tthe\t-0.4
-1.1\thouse\t-0.3
-1.3\tis\t-0.2
-1.4\tsmall\t-0.5
-1.6\tbig\t-0.25

\\2-grams:
-0.4\t<s> the\t-0.2
-0.5\tthe house\t-0.15
-0.7\thouse is\t-0.3
-0.8\tis small\t-0.1
-0.9\tsmall </s>
-1.0\tthe big\t-0.2
-0.6\tbig house\t-0.1
-1.1\tis big
-1.3\thouse </s>

\\3-grams:
-0.2\t<s> the house
-0.3\tthe house is
-0.25\thouse is small
-0.35\tthe big house

\\end\\
"""

# test_lm: a bigram over the same words.
TOY_ARPA["bigram"] = """\
\\data\\
ngram 1=7
ngram 2=6

\\1-grams:
-99\t<s>\t-0.5
-1.0\t</s>
-1.7\t<unk>
-0.8\tthe\t-0.3
-1.2\thouse\t-0.4
-1.1\tis\t-0.2
-1.5\tsmall

\\2-grams:
-0.3\t<s> the
-0.6\tthe house
-0.5\thouse is
-0.9\tis small
-0.7\tsmall </s>
-1.4\tis </s>

\\end\\
"""

# the search tests (search_fixtures): a trigram over the target words x, y, z, w of random grammars.
TOY_ARPA["search"] = """\
\\data\\
ngram 1=7
ngram 2=9
ngram 3=5

\\1-grams:
-99\t<s>\t-0.5
-1.1\t</s>
-2.0\t<unk>
-0.8\tx\t-0.3
-0.9\ty\t-0.25
-1.0\tz\t-0.2
-1.3\tw\t-0.4

\\2-grams:
-0.3\t<s> x\t-0.2
-0.6\t<s> y
-0.4\tx y\t-0.1
-0.5\ty z\t-0.15
-0.7\tz w
-0.45\tw </s>
-0.55\tz </s>
-0.9\ty x\t-0.3
-0.65\tx z

\\3-grams:
-0.2\t<s> x y
-0.25\tx y z
-0.15\ty z </s>
-0.1\ty x y
-0.35\t<s> x z

\\end\\
"""

# test_decoder: a bigram over the hand-written grammar's English, with "[" and "]".
TOY_ARPA["decoder"] = """\
\\data\\
ngram 1=12
ngram 2=12

\\1-grams:
-99\t<s>\t-0.5
-1.0\t</s>
-2.0\t<unk>
-1.0\tthe\t-0.3
-1.3\thouse\t-0.3
-1.4\tis\t-0.3
-1.5\tsmall\t-0.3
-1.5\tgreen\t-0.3
-1.6\ta\t-0.3
-1.7\tdog\t-0.3
-1.2\t[\t-0.3
-1.2\t]\t-0.3

\\2-grams:
-0.3\t<s> the
-0.4\tthe house
-0.5\thouse is
-0.5\tis small
-0.4\tsmall </s>
-0.6\tthe green
-0.5\tgreen house
-0.6\ta dog
-0.5\tdog is
-0.2\tthe [
-0.2\t[ house
-0.2\thouse ]

\\end\\
"""


def write_toy_arpa(name: str, directory, file_name: str | None = None) -> pathlib.Path:
    """Write the toy model `name` (a key of TOY_ARPA) into `directory`; its path."""
    path = pathlib.Path(directory) / (file_name or f"{name}.arpa")
    path.write_text(TOY_ARPA[name])
    return path


@pytest.fixture(scope="session")
def toy_arpa(tmp_path_factory):
    """name -> the path of that toy ARPA model (written once per session; do not change it)."""
    directory = tmp_path_factory.mktemp("toy-lm")
    paths: dict[str, pathlib.Path] = {}

    def path_of(name: str) -> pathlib.Path:
        if name not in paths:
            paths[name] = write_toy_arpa(name, directory)
        return paths[name]

    return path_of
