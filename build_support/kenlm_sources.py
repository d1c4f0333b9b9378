"""Compiler settings for building KenLM's query code into decoder._ext._lm.

The sources come from the kenlm source distribution that
models/kenlm/fetch_sources.sh unpacks. Only the query side is compiled (the
same file set as kenlm's own setup.py): util/, util/double-conversion/ and
lm/ top level, without tests and main programs. Estimation (lmplz) and
build_binary are built separately with CMake.
"""
import glob
import os
import platform
import shutil
import subprocess
import tempfile

# State arrays are sized by this at compile time, so every module that
# includes KenLM headers must agree on it (see kenlm_header_kwargs).
KENLM_MAX_ORDER = 6

KENLM_RELATIVE_DIR = os.path.join("models", "kenlm", "build", "src", "kenlm")

# (header, library, macro that turns on KenLM's support for it)
COMPRESSION_LIBRARIES = [
    ("zlib.h", "z", "HAVE_ZLIB"),
    ("bzlib.h", "bz2", "HAVE_BZLIB"),
    ("lzma.h", "lzma", "HAVE_XZLIB"),
]


def kenlm_source_dir(root):
    """The unpacked kenlm sdist, or a clear error telling how to get it."""
    source_dir = os.path.join(root, KENLM_RELATIVE_DIR)
    if not os.path.isfile(os.path.join(source_dir, "lm", "model.cc")):
        raise RuntimeError(
            f"KenLM sources not found in {source_dir}; "
            "run `bash models/kenlm/fetch_sources.sh` first (make install does)"
        )
    return source_dir


def kenlm_query_sources(source_dir):
    """KenLM's query-only .cc files (no tests, no main programs)."""
    patterns = ["util/*.cc", "util/double-conversion/*.cc", "lm/*.cc"]
    sources = []
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(source_dir, pattern))):
            if path.endswith("main.cc") or path.endswith("test.cc"):
                continue
            sources.append(path)
    return sources


def kenlm_header_kwargs(root):
    """What a module needs to include KenLM headers (i.e. to cimport decoder._ext._kenlm)."""
    return {
        "include_dirs": [kenlm_source_dir(root)],
        "define_macros": [("KENLM_MAX_ORDER", str(KENLM_MAX_ORDER))],
        "language": "c++",
    }


def _compiles_and_links(header, library):
    """True if a C++ program including <header> links against -l<library>."""
    compiler = os.environ.get("CXX", "c++").split()
    if shutil.which(compiler[0]) is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "probe.cc")
        with open(program, "w") as f:
            f.write(f"#include <{header}>\nint main() {{ return 0; }}\n")
        command = compiler + [program, "-o", os.path.join(tmp, "probe"), f"-l{library}"]
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return result.returncode == 0


def kenlm_extension_kwargs(root):
    """Extension keyword arguments that compile KenLM into the _lm module."""
    source_dir = kenlm_source_dir(root)
    kwargs = kenlm_header_kwargs(root)
    define_macros = list(kwargs["define_macros"]) + [("NDEBUG", None)]
    libraries = []
    for header, library, macro in COMPRESSION_LIBRARIES:
        # Without these, KenLM still reads plain ARPA and binary files.
        if _compiles_and_links(header, library):
            define_macros.append((macro, None))
            libraries.append(library)
    if platform.system() == "Linux":
        define_macros.append(("HAVE_CLOCKGETTIME", None))
        libraries.append("rt")
    kwargs.update(
        sources=kenlm_query_sources(source_dir),
        define_macros=define_macros,
        libraries=libraries,
        # Hidden visibility keeps our KenLM symbols from clashing with the
        # kenlm PyPI module's copy when both are loaded in one process.
        extra_compile_args=["-std=c++11", "-fvisibility=hidden"],  # after setup.py's -O3
    )
    return kwargs
