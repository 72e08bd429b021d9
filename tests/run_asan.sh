#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run of the whole test suite: configures
# SRC_DIR into BUILD_DIR with -DHEADWISE_SANITIZE=address,undefined (any UB report is
# fatal: -fno-sanitize-recover=undefined), builds the unit tests and the command line,
# and runs ctest there. Exits non-zero on a build failure, a failing test or any
# sanitizer report.
#
#   tests/run_asan.sh [SRC_DIR] [BUILD_DIR]     (defaults: this checkout, SRC_DIR/build-asan)
#   env: JOBS (build jobs, default 2), CTEST_ARGS (extra ctest arguments),
#        HEADWISE_KEEP_ASAN_BUILD=1 (keep BUILD_DIR after a pass; by default it goes)
#
# Left out (ctest -E), with the reason:
#   install_package  not registered in sanitizer builds (it installs and links a C
#                    example against the library, which would need the ASan runtime)
#   maps_browser     drives headless Chromium over the page; the page is the same
#                    bytes in both builds and the Release run checks it
#   fuzz_*, *san_*   the fuzz and sanitizer checks themselves (their own builds)
#   the reference comparisons on whole models (e2e float64 PyTorch / llama.cpp / quant
#   quality runs, the Node tokenizer and OpenAI-client runs, the 30 s load test): they
#   drive the same kernels, readers and server code the unit suites cover, on models
#   large enough that under ASan (Debug -O1, 2 cores) they would add half an hour to
#   CI; the Release run checks them. The unit suites, the CLI error paths
#   (e2e.load_errors, e2e.checkpoint_errors), greedy stories260K and the hostile
#   corpus do run here.
#   Resources.MemoryFlatOverAThousandDistinctPrefillLengths and
#   BenchAttention.LongCausalPrefillPeakRssStaysWithinTensorsPlus64MiB  measure the
#                    process's RSS, which under ASan includes its shadow memory and its
#                    quarantine of freed blocks (by design it grows until its cap), so
#                    they say nothing about headwise there; the Release run checks them
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${1:-$here/..}" && pwd)
build=${2:-$src/build-asan}
jobs=${JOBS:-2}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Debug keeps the asserts on; -O1 keeps the suite's run time reasonable.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1" "${launcher[@]}" \
  -DHEADWISE_SANITIZE=address,undefined -DHEADWISE_BUILD_BENCH=OFF -DHEADWISE_BUILD_TESTS=ON \
  -DHEADWISE_TEST_TSAN=OFF -DHEADWISE_TEST_ASAN=OFF -DHEADWISE_TEST_FUZZ=OFF >/dev/null
cmake --build "$build" -j "$jobs"

log=$(mktemp "${TMPDIR:-/tmp}/headwise-asan.XXXXXX")
trap 'rm -f "$log"' EXIT
# halt_on_error / abort_on_error: the first report fails the test it happens in.
# detect_leaks: leaks count too. allocator_may_return_null: a malloc too large for ASan
# returns NULL as it would without ASan, so the code's own out-of-memory path runs. OMP_NUM_THREADS=2 keeps the run predictable on a
# small machine.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$here/asan.supp:${LSAN_OPTIONS:-}"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
start=$(date +%s)
set +e
# shellcheck disable=SC2086
ctest --test-dir "$build" --output-on-failure -j "$jobs" -E '^(install_package|maps_browser|fuzz_.*|.*san_.*|Resources\.MemoryFlatOverAThousandDistinctPrefillLengths|BenchAttention\.LongCausalPrefillPeakRssStaysWithinTensorsPlus64MiB|e2e\.(llama_logits|gpt2|architectures|llamacpp_logits|llamacpp_quant|quant_quality)|tokenizer_reference_node|tokenizer_vs_llamacpp_and_hf|server\.(openai_client|concurrency|faults|load_autocannon|chat_template_jinja))$' ${CTEST_ARGS:-} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "run_asan.sh: the suite took $(( $(date +%s) - start )) s under ASan+UBSan"
if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log"; then
  echo "run_asan.sh: a sanitizer reported a problem (see above)" >&2
  exit 1
fi
if [[ $rc -ne 0 ]]; then
  echo "run_asan.sh: ctest exited with $rc" >&2
  exit "$rc"
fi
echo "run_asan.sh: no AddressSanitizer/UndefinedBehaviorSanitizer reports"
# The instrumented build is ~4.6 GB (its test binaries most of it). Once its suite has
# passed it goes, unless HEADWISE_KEEP_ASAN_BUILD=1: a CI host's disk filled up once (a
# later test's ENOSPC) with it there. A failure keeps it; a rerun builds it again (with
# ccache where installed). Only a folder that is a CMake build and not the sources.
if [[ "${HEADWISE_KEEP_ASAN_BUILD:-0}" != 1 && -f "$build/CMakeCache.txt" && "$(cd "$build" && pwd)" != "$src" ]]; then
  rm -rf -- "$build"
  echo "run_asan.sh: removed $build (HEADWISE_KEEP_ASAN_BUILD=1 keeps it)"
fi
