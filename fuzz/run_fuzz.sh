#!/usr/bin/env bash
# Runs one fuzz target: first replays every input in fuzz/regressions/READER/ (each
# once; any crash fails), then fuzzes for SECONDS from the seeds in fuzz/corpus/READER/
# plus the files of SHARED_DIR listed in fuzz/corpus/READER/SHARED (copied into a
# temporary corpus; nothing is written into the checkout). A crash, leak, timeout
# (> 30 s per input: generous, so a busy machine does not fail it) or an allocation over 2 GiB fails the run and leaves the input in
# ARTIFACT_DIR (default: BIN_DIR/artifacts/READER/); fix the reader, then add the input
# to fuzz/regressions/READER/ so it is replayed from then on.
#
#   fuzz/run_fuzz.sh READER BIN_DIR SECONDS [SHARED_DIR] [ARTIFACT_DIR]
#   env: FUZZ_KEEP_CORPUS=DIR keeps the grown corpus in DIR (for long local runs),
#        FUZZ_LOG=FILE keeps libFuzzer's whole log in FILE
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
reader=$1
bin=$2/${reader}_fuzz
seconds=$3
shared=${4:-$here/../../shared}
artifacts=${5:-$2/artifacts/$reader}
[[ -x "$bin" ]] || { echo "run_fuzz.sh: $bin is not built (fuzz/build_fuzz.sh)" >&2; exit 1; }
mkdir -p "$artifacts"

# libFuzzer: -rss_limit_mb also bounds a single malloc; -timeout is per input.
opts=(-timeout=30 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/")
[[ -f "$here/corpus/$reader.dict" ]] && opts+=(-dict="$here/corpus/$reader.dict")
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

regressions=()
if [[ -d "$here/regressions/$reader" ]]; then
  while IFS= read -r -d '' f; do regressions+=("$f"); done < <(find "$here/regressions/$reader" -type f -print0 | sort -z)
fi
if ((${#regressions[@]})); then
  echo "run_fuzz.sh: replaying ${#regressions[@]} regression input(s) of $reader"
  "$bin" "${opts[@]}" "${regressions[@]}" 2>&1 | tail -n 3
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "run_fuzz.sh: $reader: a regression input fails again" >&2; exit 1; }
fi

corpus=${FUZZ_KEEP_CORPUS:-$(mktemp -d "${TMPDIR:-/tmp}/headwise-fuzz-$reader.XXXXXX")}
[[ -n "${FUZZ_KEEP_CORPUS:-}" ]] || trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus"
if [[ -d "$here/corpus/$reader" ]]; then
  find "$here/corpus/$reader" -type f ! -name SHARED -exec cp {} "$corpus/" \;
  if [[ -f "$here/corpus/$reader/SHARED" ]]; then
    while read -r rel; do
      [[ -z "$rel" || "$rel" == \#* ]] && continue
      if [[ -f "$shared/$rel" ]]; then cp "$shared/$rel" "$corpus/shared-$(echo "$rel" | tr / _)"
      else echo "run_fuzz.sh: seed $shared/$rel is missing; fuzzing without it" >&2; fi
    done < "$here/corpus/$reader/SHARED"
  fi
fi

log=${FUZZ_LOG:-$(mktemp "${TMPDIR:-/tmp}/headwise-fuzz-$reader-log.XXXXXX")}
set +e
"$bin" "${opts[@]}" -max_total_time="$seconds" "$corpus" >"$log" 2>&1
rc=$?
set -e
runs=$(grep -oE 'stat::number_of_executed_units: +[0-9]+' "$log" | awk '{print $2}' | tail -n1)
cov=$(grep -oE '(DONE|pulse|NEW|REDUCE|INITED) +cov: [0-9]+ ft: [0-9]+' "$log" | tail -n1 | awk '{print $3, $5}')
size=$(find "$corpus" -type f | wc -l)
speed=$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$log" | awk '{print $2}' | tail -n1)
echo "run_fuzz.sh: $reader: ${runs:-?} executions in $seconds s (${speed:-?}/s), edges ${cov% *}, features ${cov#* }, corpus $size files, exit $rc"
if [[ $rc -ne 0 ]]; then
  grep -E 'ERROR|SUMMARY|runtime error|==[0-9]+==|Test unit written|#[0-9]+ +in ' "$log" | head -n 40 >&2
  echo "run_fuzz.sh: $reader: found a failing input (in $artifacts); fix the reader, then add the input to fuzz/regressions/$reader/" >&2
  [[ -n "${FUZZ_LOG:-}" ]] || rm -f "$log"
  exit 1
fi
[[ -n "${FUZZ_LOG:-}" ]] || rm -f "$log"
