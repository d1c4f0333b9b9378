#!/usr/bin/env bash
# Build KenLM's lmplz, build_binary and query (cached) into models/kenlm/build/bin/.
# Sources come from the sdist unpacked by fetch_sources.sh; the build needs
# Debian's boost, zlib, bz2 and lzma development packages and cmake, which are
# installed here when missing. Prints the bin directory on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin_dir="$here/build/bin"
if [ -x "$bin_dir/lmplz" ] && [ -x "$bin_dir/build_binary" ] && [ -x "$bin_dir/query" ]; then
    echo "$bin_dir"
    exit 0
fi

debian_packages=(libboost-program-options-dev libboost-system-dev libboost-thread-dev
                 libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev cmake make g++)
missing=()
for package in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "build_tools.sh: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q "${missing[@]}" >&2
fi

source_dir="$(bash "$here/fetch_sources.sh")"
cmake_dir="$here/build/cmake"
mkdir -p "$cmake_dir" "$bin_dir"
jobs="$(nproc 2>/dev/null || echo 2)"
(
    cd "$cmake_dir"
    cmake -DCMAKE_BUILD_TYPE=Release -DKENLM_MAX_ORDER=6 "$source_dir" >&2
    make -j"$jobs" lmplz build_binary query >&2
)
cp "$cmake_dir/bin/lmplz" "$cmake_dir/bin/build_binary" "$cmake_dir/bin/query" "$bin_dir/"
echo "$bin_dir"
