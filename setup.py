"""Builds the compiled hot loops in ext/ as the package decoder._ext.

decoder/_ext is a symlink to ext/, so Cython sees every .pyx under its full
module name (decoder._ext._x) and cross-module cimports resolve.
"""
import glob
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # build_support/ helpers


def extra_sources(name):
    """Per-module C/C++ sources and flags (KenLM is compiled into _lm; the
    other modules get its headers so that they can cimport decoder._ext._lm)."""
    from build_support.kenlm_sources import kenlm_extension_kwargs, kenlm_header_kwargs

    if name == "_lm":
        return kenlm_extension_kwargs(HERE)
    return kenlm_header_kwargs(HERE)


def extensions():
    exts = []
    for pyx in sorted(glob.glob(os.path.join("decoder", "_ext", "_*.pyx"))):
        name = os.path.splitext(os.path.basename(pyx))[0]
        kwargs = {
            "include_dirs": [numpy.get_include()],
            "extra_compile_args": ["-O3"],
            "define_macros": [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        }
        for key, value in extra_sources(name).items():
            if isinstance(value, list):
                kwargs.setdefault(key, [])
                kwargs[key] = kwargs[key] + value
            else:
                kwargs[key] = value
        sources = [pyx] + kwargs.pop("sources", [])
        exts.append(Extension(f"decoder._ext.{name}", sources, **kwargs))
    return cythonize(
        exts,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )


setup(ext_modules=extensions())
