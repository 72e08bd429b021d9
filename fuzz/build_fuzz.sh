#!/usr/bin/env bash
# Configures SRC_DIR into BUILD_DIR with clang-14, libFuzzer and ASan+UBSan
# (-DHEADWISE_FUZZ=ON -DHEADWISE_SANITIZE=address,undefined) and builds every
# fuzz/*_fuzz.cpp target into BUILD_DIR/fuzz/.
#
#   fuzz/build_fuzz.sh [SRC_DIR] [BUILD_DIR]   (defaults: this checkout, SRC_DIR/build-fuzz)
#   env: JOBS (build jobs, default 2), CXX_FUZZ (default clang++-14)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${1:-$here/..}" && pwd)
build=${2:-$src/build-fuzz}
jobs=${JOBS:-2}
cxx=${CXX_FUZZ:-clang++-14}
command -v "$cxx" >/dev/null || { echo "build_fuzz.sh: $cxx not found (Debian: clang-14 libfuzzer-14-dev)" >&2; exit 1; }

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Debug keeps the asserts; -O1 keeps libFuzzer's executions per second reasonable.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" "${launcher[@]}" \
  -DHEADWISE_FUZZ=ON -DHEADWISE_SANITIZE=address,undefined \
  -DHEADWISE_BUILD_TESTS=OFF -DHEADWISE_BUILD_BENCH=OFF >/dev/null
targets=()
for f in "$src"/fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" .cpp)"); done
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
echo "build_fuzz.sh: built ${targets[*]} in $build/fuzz"
