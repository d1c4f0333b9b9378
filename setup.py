"""Builds the compiled hot loops in ext/ as the package decoder._ext.

decoder/_ext is a symlink to ext/, so Cython sees every .pyx under its full
module name (decoder._ext._x) and cross-module cimports resolve. ext/_kenlm.pxd
(KenLM's declarations) has no .pyx: it is compiled into the modules that
cimport it.

What `pip install .` from a fresh clone needs: Python >= 3.10 with its headers
(python3-dev), a C++11 compiler (g++ or clang++), and access to the package
index pip is configured with, for the build requirements (pyproject.toml) and
KenLM's C++ sources: when models/kenlm/build/src/kenlm is missing, the build
downloads the kenlm sdist with `pip download` and unpacks it there
(build_support/kenlm_sources.py). zlib, bzip2 and xz headers (zlib1g-dev,
libbz2-dev, liblzma-dev) are optional: with them KenLM also reads compressed
ARPA files.
"""
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # build_support/ helpers

from build_support.kenlm_sources import kenlm_extension_kwargs, kenlm_header_kwargs  # noqa: E402

# Cython compiler directives and C++ compile settings of every module; a module
# adds its own directives in MODULES below.
COMPILER_DIRECTIVES = {"language_level": 3, "boundscheck": False, "wraparound": False, "cdivision": True}
LANGUAGE = "c++"
EXTRA_COMPILE_ARGS = ["-O3"]
DEFINE_MACROS = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
INCLUDE_DIRS = [numpy.get_include(), "ext"]  # ext/: the project's C++ headers (*.hh)

# The compiled modules, decoder._ext.<name>: name -> (KenLM use, its own C++ headers,
# its own Cython directives). KenLM use: "query" compiles KenLM's query code into
# the module (only _lm: every other module calls KenLM through _lm's nogil
# functions), "headers" gives it KenLM's headers (it cimports _kenlm's state types).
MODULES = {
    "_lm": ("query", ["lm_rule_score.hh", "lm_model.hh"], {}),
    "_chart_grammar": ("headers", ["chart_containers.hh"], {}),
    "_chart": ("headers", ["chart_containers.hh", "search_errors.hh", "prefetch.hh"], {"initializedcheck": False}),
    "_incremental": ("headers", ["chart_containers.hh", "search_errors.hh", "prefetch.hh", "incremental_sort.hh", "incremental_layout.hh"], {"initializedcheck": False}),
    "_kbest": ("headers", ["kbest_containers.hh", "search_errors.hh"], {"initializedcheck": False}),  # headers: cimports _chart's
    "_two_pass": ("headers", ["chart_containers.hh", "search_errors.hh", "prefetch.hh", "two_pass_containers.hh"], {"initializedcheck": False}),
    "_sdig": ("headers", ["sdig_containers.hh"], {"initializedcheck": False}),
    "_rule_table": (None, [], {}),
    "_rule_reader": (None, [], {}),
    "_extract": (None, [], {}),
    "_sequence_index": (None, ["prefetch.hh"], {}),
    "_icr": (None, ["prefetch.hh"], {}),
    "_rule_binarizer": (None, [], {}),
    "_vector_arrays": (None, [], {}),
}


def kenlm_kwargs(kenlm_use):
    if kenlm_use == "query":
        return kenlm_extension_kwargs(HERE)
    if kenlm_use == "headers":
        return kenlm_header_kwargs(HERE)
    return {}


def extension(name, kenlm_use, headers):
    kwargs = {
        "include_dirs": list(INCLUDE_DIRS),
        "extra_compile_args": list(EXTRA_COMPILE_ARGS),
        "define_macros": list(DEFINE_MACROS),
        "depends": [os.path.join("ext", header) for header in headers],
        "language": LANGUAGE,
    }
    for key, value in kenlm_kwargs(kenlm_use).items():
        if isinstance(value, list):
            kwargs[key] = kwargs.get(key, []) + value
        else:
            kwargs[key] = value
    sources = [os.path.join("decoder", "_ext", f"{name}.pyx")] + kwargs.pop("sources", [])
    return Extension(f"decoder._ext.{name}", sources, **kwargs)


def extensions():
    compiled = []
    for name, (kenlm_use, headers, directives) in MODULES.items():
        compiled += cythonize([extension(name, kenlm_use, headers)],
                              compiler_directives={**COMPILER_DIRECTIVES, **directives})
    return compiled


setup(ext_modules=extensions())
