"""The compiled modules (ext/*.pyx, decoder._ext) are required: every one is built, and an
importer without them fails at import with a message saying how to build them."""
import os
import re
import subprocess
import sys

import pytest

import decoder
from decoder._ext import BUILD_HINT, compiled_module

REPO = os.path.dirname(os.path.dirname(os.path.abspath(decoder.__file__)))
EXT = os.path.join(REPO, "ext")
PYX_MODULES = sorted(name[:-4] for name in os.listdir(EXT) if name.endswith(".pyx"))


@pytest.mark.parametrize("name", PYX_MODULES)
def test_every_pyx_is_built(name):
    # setup.py lists the modules by hand: a .pyx missing from its list is not built
    assert compiled_module(name).__name__ == f"decoder._ext.{name}"


# (importer, a compiled module it needs)
IMPORTERS = [
    ("decoder.extract.trees", "_extract"),
    ("decoder.extract.alignment", "_extract"),
    ("decoder.extract.pipeline", "_extract"),
    ("decoder.grammar", "_rule_table"),
    ("decoder.rule_arrays", "_rule_reader"),
    ("decoder.binarize", "_rule_binarizer"),
    ("decoder.binarize.icr", "_icr"),
    ("decoder.lm", "_lm"),
    ("decoder.search.driver", "_chart"),
    ("decoder.search.grammar_arrays", "_chart_grammar"),
    ("decoder.search.readback", "_chart"),
    ("decoder.search.kbest", "_kbest"),
]


@pytest.mark.parametrize("importer, name", IMPORTERS)
def test_an_importer_without_its_compiled_module_says_how_to_build_it(importer, name):
    # None in sys.modules makes `import decoder._ext.<name>` fail as an unbuilt module does
    program = (f"import sys; sys.modules['decoder._ext.{name}'] = None\n"
               f"try:\n    import {importer}\n"
               f"except ImportError as error:\n    print(error)\nelse:\n    print('imported')\n")
    result = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    message = result.stdout.strip()
    assert f"decoder._ext.{name}" in message and BUILD_HINT in message, message
    assert "python setup.py build_ext --inplace" in message and "make install" in message


def test_ext_has_no_cython_macros_or_inline_cpp():
    # C++ lives in ext/*.hh, constants are enums or typed module constants
    for name in os.listdir(EXT):
        if name.endswith((".pyx", ".pxd")):
            with open(os.path.join(EXT, name), encoding="utf-8") as f:
                for number, line in enumerate(f, start=1):
                    assert not re.match(r"\s*DEF ", line), f"{name}:{number}: {line.strip()}"
                    assert "extern from *" not in line, f"{name}:{number}: {line.strip()}"
