"""KenLM's C++ sources, and the compiler settings for building its query code into decoder._ext._lm.

The sources come from the kenlm source distribution on PyPI: when they are not
unpacked yet (a fresh clone), `fetch_kenlm_sources` downloads the sdist with
`pip download` (so pip's configured index or mirror is used; the build needs
network access to it, or a copy of the sdist in models/kenlm/build/sdist/) and
unpacks it into models/kenlm/build/src/kenlm, where `make` and
models/kenlm/fetch_sources.sh put it too. Only the query side is compiled (the
same file set as kenlm's own setup.py): util/, util/double-conversion/ and
lm/ top level, without tests and main programs. Estimation (lmplz) and
build_binary are built separately with CMake (models/kenlm/build_tools.sh).
"""
import glob
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# State arrays are sized by this at compile time, so every module that
# includes KenLM headers must agree on it (see kenlm_header_kwargs).
KENLM_MAX_ORDER = 6

KENLM_RELATIVE_DIR = os.path.join("models", "kenlm", "build", "src", "kenlm")
SDIST_RELATIVE_DIR = os.path.join("models", "kenlm", "build", "sdist")

# (header, library, macro that turns on KenLM's support for it)
COMPRESSION_LIBRARIES = [
    ("zlib.h", "z", "HAVE_ZLIB"),
    ("bzlib.h", "bz2", "HAVE_BZLIB"),
    ("lzma.h", "lzma", "HAVE_XZLIB"),
]


def _has_sources(source_dir):
    return os.path.isfile(os.path.join(source_dir, "lm", "model.cc"))


def _download_sdist(sdist_dir):
    """The kenlm sdist in sdist_dir: one already there, else `pip download`ed from the package index."""
    os.makedirs(sdist_dir, exist_ok=True)
    archives = sorted(glob.glob(os.path.join(sdist_dir, "kenlm-*")))
    if not archives:
        # --no-build-isolation: pip prepares the sdist's metadata with this build's setuptools
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "kenlm",
                   "--no-build-isolation", "--dest", sdist_dir, "kenlm"]
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        archives = sorted(glob.glob(os.path.join(sdist_dir, "kenlm-*")))
        if result.returncode != 0 or not archives:
            raise RuntimeError(
                "could not download KenLM's sources (the kenlm sdist) from the package index with "
                f"`{' '.join(command)}`: {result.stdout.strip()[-2000:]}\n"
                f"Put a kenlm-*.tar.gz or .zip from https://pypi.org/project/kenlm/#files into {sdist_dir} "
                "and build again.")
    return archives[0]


def fetch_kenlm_sources(root):
    """Unpack the kenlm sdist into root/models/kenlm/build/src/kenlm (downloading it first if needed);
    returns that directory. Nothing is done when the sources are already there."""
    source_dir = os.path.join(root, KENLM_RELATIVE_DIR)
    if _has_sources(source_dir):
        return source_dir
    archive = _download_sdist(os.path.join(root, SDIST_RELATIVE_DIR))
    parent = os.path.dirname(source_dir)
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent) as unpack:
        if archive.endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                z.extractall(unpack)
        else:
            with tarfile.open(archive) as t:
                if hasattr(tarfile, "data_filter"):  # Python >= 3.12 (and patch releases): no links out
                    t.extractall(unpack, filter="data")
                else:
                    t.extractall(unpack)
        (top,) = os.listdir(unpack)  # kenlm-VERSION/
        shutil.rmtree(source_dir, ignore_errors=True)
        os.replace(os.path.join(unpack, top), source_dir)
    if not _has_sources(source_dir):
        raise RuntimeError(f"{archive} holds no lm/model.cc: not a KenLM source distribution")
    return source_dir


def kenlm_source_dir(root):
    """The unpacked kenlm sdist, fetched first when it is missing (fetch_kenlm_sources)."""
    return fetch_kenlm_sources(root)


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


if __name__ == "__main__":  # python build_support/kenlm_sources.py ROOT: fetch the sources, print where
    print(fetch_kenlm_sources(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")))
