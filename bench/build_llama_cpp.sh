#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, llama-quantize and llama-server from the source
# node-llama-cpp 3.21.1 ships (node_modules/node-llama-cpp/llama/gitRelease.bundle), for the
# comparisons in bench/compare_llama_cpp.py (bench, quantize) and the serve comparison
# (server; plain HTTP only: no OpenSSL, no curl, no prebuilt web UI download). Nothing of llama.cpp enters the project: it is cloned and
# built in a temporary folder (default /tmp/headwise-llama-cpp, or $1), CPU only,
# Release, -march=native, -j2 (the machine is shared), under nice.
# Prints the folder holding the three binaries on the last line.
#   bench/build_llama_cpp.sh [DIR] [--no-amx]
# --no-amx compiles ggml's AMX int8 kernels out (-mno-amx-*): on an Intel VM with AMX
# (family 6, model 167 as it reports itself; 2026-12-04) llama.cpp's AMX matmul dies of
# a general protection fault in its ldtilecfg on the first quantized prefill, while
# oneDNN's AMX kernels run there; without AMX it runs its AVX-512 VNNI kernels.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$here/tests/node/node_modules/node-llama-cpp/llama/gitRelease.bundle"
dest=/tmp/headwise-llama-cpp
flags=""
for a in "$@"; do
  case "$a" in
    --no-amx) flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" ;;
    -*) echo "build_llama_cpp.sh: unknown option $a (usage: [DIR] [--no-amx])" >&2; exit 2 ;;
    *) dest="$a" ;;
  esac
done
if [[ ! -f "$bundle" ]]; then
  echo "build_llama_cpp.sh: $bundle is missing: run (cd tests/node && npm ci) first" >&2
  exit 1
fi
if [[ ! -d "$dest/src/.git" ]]; then
  rm -rf "$dest/src"
  mkdir -p "$dest"
  git clone --quiet "$bundle" "$dest/src"
fi
cmake -S "$dest/src" -B "$dest/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENMP=ON -DLLAMA_CURL=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_TOOLS=ON -DBUILD_SHARED_LIBS=OFF -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS="$flags" >"$dest/configure.log"
nice -n 19 cmake --build "$dest/build" -j2 --target llama-bench llama-quantize llama-server >"$dest/build.log"
echo "$dest/build/bin"
