#!/usr/bin/env bash
# Runs one end-to-end check (the arguments: its command line, which names its scratch
# folder with --workdir DIR) and removes DIR when the check passes. The checks write
# 5 MB to 2.3 GB of models each (3.5 GB in all, e2e.hf_quantized the most), and a CI
# host with little free disk once ran out of it in the middle of one (ENOSPC). A failed
# or skipped check keeps its folder for a look; HEADWISE_KEEP_E2E_WORKDIRS=1 keeps all.
set -u
dir=""
prev=""
for a in "$@"; do
  [[ "$prev" == --workdir ]] && dir=$a
  prev=$a
done
"$@"
rc=$?
if [[ $rc -eq 0 && -n "$dir" && "${HEADWISE_KEEP_E2E_WORKDIRS:-0}" != 1 ]]; then
  rm -rf -- "$dir"
fi
exit $rc
