#!/usr/bin/env bash
# Fetch and unpack the KenLM source distribution from PyPI (cached); prints where it is.
# Its C++ sources are compiled into decoder._ext._lm and its CMake build gives lmplz and
# build_binary (see build_tools.sh). The fetching is build_support/kenlm_sources.py's, which
# setup.py also calls, so that `pip install .` from a fresh clone fetches them itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m pip install -q wheel >&2
python3 "$here/../../build_support/kenlm_sources.py" "$here/../.."
