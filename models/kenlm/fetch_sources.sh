#!/usr/bin/env bash
# Fetch and unpack the KenLM source distribution from PyPI (cached).
# Its C++ sources are compiled into decoder._ext._lm (see build_support/kenlm_sources.py)
# and its CMake build gives lmplz and build_binary (see build_tools.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/build/src"
if [ -f "$dest/kenlm/lm/model.cc" ]; then
    echo "$dest/kenlm"
    exit 0
fi
mkdir -p "$here/build/sdist" "$dest"
python3 -m pip install -q wheel >&2
python3 -m pip download -q --no-deps --no-binary kenlm --no-build-isolation -d "$here/build/sdist" kenlm >&2
archive="$(ls "$here"/build/sdist/kenlm-* | head -n 1)"
rm -rf "$dest/kenlm" "$dest/unpack"
mkdir -p "$dest/unpack"
case "$archive" in
    *.zip) python3 -m zipfile -e "$archive" "$dest/unpack" ;;
    *) tar -xf "$archive" -C "$dest/unpack" ;;
esac
mv "$dest"/unpack/* "$dest/kenlm"
rmdir "$dest/unpack"
echo "$dest/kenlm"
