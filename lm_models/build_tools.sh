#!/usr/bin/env bash
# Build KenLM's lmplz and build_binary into lm_models/tools/bin (git-ignored).
#
# The sources come from the kenlm 0.3.0 sdist on PyPI (it ships the full C++ tree and
# CMakeLists); the build dependencies come from Debian (installed when missing; npm, which
# corpora.py needs, is installed by the Makefile's corpora target). Idempotent: when both
# binaries already exist it neither builds nor installs anything (no root needed).
#
#   PYTHON=/path/to/python bash lm_models/build_tools.sh
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOOLS="$HERE/tools"
BIN="$TOOLS/bin"
KENLM_VERSION="${KENLM_VERSION:-0.3.0}"
PYTHON="${PYTHON:-python3}"

if [[ -x "$BIN/lmplz" && -x "$BIN/build_binary" ]]; then
    echo "build_tools: $BIN/lmplz and $BIN/build_binary exist, nothing to build or install"
    exit 0
fi

APT_PKGS=(cmake g++ make libboost-program-options-dev libboost-system-dev
          libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev)
missing=()
for p in "${APT_PKGS[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "build_tools: installing ${missing[*]}"
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

mkdir -p "$TOOLS/src" "$BIN"
SDIST="$TOOLS/src/kenlm-$KENLM_VERSION.tar.gz"
if [[ ! -f "$SDIST" ]]; then
    # Plain sdist download (kenlm publishes no wheels for it). Do not use --no-binary :all:.
    "$PYTHON" -m pip download --no-deps --no-build-isolation -d "$TOOLS/src" "kenlm==$KENLM_VERSION"
fi
SRC="$TOOLS/src/kenlm-$KENLM_VERSION"
if [[ ! -d "$SRC" ]]; then
    tar -xzf "$SDIST" -C "$TOOLS/src"
fi

BUILD="$TOOLS/build"
mkdir -p "$BUILD"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKENLM_MAX_ORDER=6 \
      -DCOMPILE_TESTS=OFF -DENABLE_PYTHON=OFF >"$BUILD/cmake.log" 2>&1 \
    || { tail -40 "$BUILD/cmake.log"; exit 1; }
make -C "$BUILD" -j"$(nproc)" lmplz build_binary >"$BUILD/make.log" 2>&1 \
    || { tail -40 "$BUILD/make.log"; exit 1; }
cp "$BUILD/bin/lmplz" "$BUILD/bin/build_binary" "$BIN/"
echo "build_tools: built $BIN/lmplz $BIN/build_binary"
