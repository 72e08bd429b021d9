#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency tests: configures SRC_DIR into BUILD_DIR with
# -fsanitize=thread, builds runtime_test and graph_test and runs their Concurrency.* tests. Exits non-zero
# on a build failure, a failing test or any TSan report.
#
#   tests/runtime/run_tsan.sh [SRC_DIR] [BUILD_DIR]     (defaults: this checkout, SRC_DIR/build-tsan)
#   env: JOBS (build jobs, default 2), GTEST_FILTER (default 'Concurrency.*')
#
# libgomp (OpenMP) and oneDNN are not instrumented, so TSan cannot see their
# synchronisation: the tests run every session call with threads = 1 (a parallel region
# of one thread starts none) and OMP_NUM_THREADS=1 keeps model loading (weight reorders,
# synthetic weight fill) on the calling thread too. What remains is headwise's own code
# running on application threads, which is what TSan checks.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
build=${2:-$src/build-tsan}
jobs=${JOBS:-2}
filter=${GTEST_FILTER:-Concurrency.*}

flags="-fsanitize=thread -g -O1 -fno-omit-frame-pointer"
# Debug: asserts stay on; CMAKE_CXX_FLAGS carries the optimisation level.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DHEADWISE_BUILD_BENCH=OFF -DHEADWISE_BUILD_TESTS=ON
cmake --build "$build" -j "$jobs" --target runtime_test graph_test

log=$(mktemp "${TMPDIR:-/tmp}/headwise-tsan.XXXXXX")
trap 'rm -f "$log"' EXIT
# halt_on_error: the first race fails the run; exitcode 66 tells a TSan stop from a
# test failure. second_deadlock_stack for readable lock-order reports.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export OMP_NUM_THREADS=1
# runtime_test: sessions on application threads; graph_test: graph::parallel_run's own
# threads (graph/team.cpp), which are plain std::threads TSan sees.
for name in runtime_test graph_test; do
  bin=$(find "$build" -name "$name" -type f -perm -u+x | head -n 1)
  if [[ -z "$bin" ]]; then
    echo "run_tsan.sh: $name was not built under $build" >&2
    exit 1
  fi
  set +e
  "$bin" --gtest_filter="$filter" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  # A report without a non-zero exit (e.g. a user-supplied TSAN_OPTIONS overriding ours)
  # still fails the run.
  if grep -q "WARNING: ThreadSanitizer" "$log"; then
    echo "run_tsan.sh: ThreadSanitizer reported a problem in $name (see above)" >&2
    exit 1
  fi
  if [[ $rc -ne 0 ]]; then
    echo "run_tsan.sh: $bin exited with $rc" >&2
    exit "$rc"
  fi
  if ! grep -q "\[  PASSED  \]" "$log"; then
    echo "run_tsan.sh: no test of $name passed (filter '$filter' matched nothing?)" >&2
    exit 1
  fi
done
echo "run_tsan.sh: no ThreadSanitizer reports"
