#!/usr/bin/env bash
# Runs `winagg pipeline ARGS...` and prints its wall time and how many numba
# kernels it compiled: the cache index files (*.nbi) under src/ that the run
# wrote. A kernel loaded from numba's disk cache writes none.
#   bash scripts/compile_count.sh --input flights.csv --by origin --stream
set -euo pipefail
cd "$(dirname "$0")/.."
marker=$(mktemp)
sleep 1  # file times have a granularity; nothing written before this counts
SECONDS=0
log=$(mktemp)
if ! .venv/bin/winagg pipeline --no-progress "$@" > "$log" 2>&1; then
  tail -40 "$log" >&2; rm -f "$marker" "$log"; exit 1
fi
elapsed=$SECONDS
compiled=$(find src -path '*__pycache__*' -name '*.nbi' -newer "$marker" | wc -l)
cached=$(find src -path '*__pycache__*' -name '*.nbi' | wc -l)
rm -f "$marker" "$log"
printf 'seconds=%d kernels_compiled=%d kernels_in_cache=%d load=%s\n' "$elapsed" \
  "$compiled" "$cached" "$(cut -d' ' -f1-3 /proc/loadavg)"
