#!/usr/bin/env bash
# Installs the Debian packages headwise needs that are missing, then configures and
# builds it (Release) in ./build.
#   tools/setup.sh          what building and running need
#   tools/setup.sh --test   also what the test suite and the comparisons need
#                           (NumPy, PyTorch, OpenBLAS, Chromium, pkg-config)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make libdnnl-dev libxsimd-dev nlohmann-json3-dev libgtest-dev
          libgmock-dev libbenchmark-dev)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(python3 python3-numpy python3-torch libopenblas0-pthread chromium pkg-config)
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

test_options=()
[[ "${1:-}" == "--test" ]] && test_options+=(-DHEADWISE_TEST_TSAN=ON)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${test_options[@]}"
cmake --build build -j"$(nproc)"
