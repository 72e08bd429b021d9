#!/usr/bin/env bash
# Installs the Debian packages headwise needs that are missing, then configures and
# builds it (Release) in ./build.
#   tools/setup.sh          what building and running need
#   tools/setup.sh --test   also what the test suite and the comparisons need
#                           (NumPy, PyTorch, OpenBLAS, Chromium, pkg-config, clang's
#                           libFuzzer, and the pinned npm peers in tests/node:
#                           llama.cpp, Hugging Face tokenizers, the OpenAI client)
set -euo pipefail
cd "$(dirname "$0")/.."

# (oneDNN's CMake package looks for OpenCL: ocl-icd-opencl-dev and opencl-c-headers)
packages=(g++ cmake make libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libxsimd-dev
          nlohmann-json3-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev libgtest-dev
          libgmock-dev libbenchmark-dev pkg-config)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(python3 python3-numpy python3-torch libopenblas0-pthread chromium pkg-config
             clang-14 libfuzzer-14-dev libclang-rt-14-dev libomp-14-dev ccache)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [[ "$(id -u)" -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ "${1:-}" == "--test" ]]; then
  # The test peers, pinned exactly (tests/node/package-lock.json), into tests/node/node_modules.
  command -v npm >/dev/null || { echo "setup: the tests need Node.js 20+ with npm (Debian: nodejs npm)" >&2; exit 1; }
  if ! (cd tests/node && npm ls --depth=0 >/dev/null 2>&1); then
    echo "setup: installing the npm test peers (tests/node)" >&2
    (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi

test_options=()
[[ "${1:-}" == "--test" ]] && test_options+=(-DHEADWISE_TEST_TSAN=ON -DHEADWISE_TEST_ASAN=ON -DHEADWISE_TEST_FUZZ=ON)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${test_options[@]}"
cmake --build build -j"$(nproc)"
