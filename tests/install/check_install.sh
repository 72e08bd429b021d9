#!/usr/bin/env bash
# Installs a built headwise into a temporary prefix and builds a consumer against it,
# both ways an application would: CMake's find_package (CMAKE_PREFIX_PATH) and
# pkg-config. Runs both programs; fails if anything does.
#
#   tests/install/check_install.sh SRC_DIR BUILD_DIR
#
# BUILD_DIR: a configured and built headwise tree (the library target at least).
# HEADWISE_SHARED_DIR (default SRC_DIR/../shared): where models/stories260K is looked
# for, to run the example on a real model as well.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 SRC_DIR BUILD_DIR" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
example="$src/tests/install/example"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/headwise-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix"
test -f "$prefix/include/headwise/headwise.h" || { echo "headwise.h was not installed" >&2; exit 1; }

echo "== find_package(headwise) with CMAKE_PREFIX_PATH=$prefix"
cmake -S "$example" -B "$tmp/example-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
cmake --build "$tmp/example-build" -j 2
"$tmp/example-build/headwise_example" | tee "$tmp/cmake.out"
grep -q "^generated ids: [0-9]" "$tmp/cmake.out" || { echo "the example generated nothing" >&2; exit 1; }
# With a real model when ../shared/models is there (a path on the command line).
stories="${HEADWISE_SHARED_DIR:-$src/../shared}/models/stories260K"
if [[ -f "$stories/stories260K.bin" && -f "$stories/tok512.bin" ]]; then
  "$tmp/example-build/headwise_example" "$stories/stories260K.bin" "$stories/tok512.bin"
fi

echo "== pkg-config --cflags --libs headwise"
pc=$(find "$prefix" -name headwise.pc -path '*/pkgconfig/*' | head -n 1)
if [[ -z "$pc" ]]; then
  echo "headwise.pc was not installed under $prefix" >&2
  exit 1
fi
if ! command -v pkg-config > /dev/null; then
  echo "pkg-config is not installed (Debian package 'pkg-config')" >&2
  exit 1
fi
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs headwise)
echo "flags: $flags"
# shellcheck disable=SC2086  # the flags are words
"${CC:-cc}" -std=c99 -Wall -Wextra -pedantic -Werror "$example/main.c" -o "$tmp/example-pc" $flags
"$tmp/example-pc" | tee "$tmp/pc.out"
# Same library, same program: the same output.
cmp "$tmp/cmake.out" "$tmp/pc.out" || { echo "pkg-config build printed something else" >&2; exit 1; }
echo "check_install.sh: installed package works with CMake and pkg-config"
