#!/usr/bin/env bash
# The runs behind docs/scale.md's "The model against the runs": op times per
# algorithm and size on 2-8 ranks (emulated hosts on this machine, one run
# each), and init CPU, sockets, fds and memory at 32 ranks in three layouts.
# Writes RUN.json beside this script and appends every command and table to
# tables.txt. Then: go run ./cmd/hccl-go-topo check bench/results/2026-12-03/sim-check/*.json
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
cd "$ROOT"
: >"$HERE/tables.txt"
run() {
  local name="$1"
  shift
  {
    echo "\$ $* --json bench/results/2026-12-03/sim-check/$name.json   (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    "$@" --json "$HERE/$name.json" 2>&1
    echo "rc=$?"
    echo
  } >>"$HERE/tables.txt"
}
export SCALE_TIME_REPS=7
for layout in "2 1" "4 1" "4 2" "8 2" "8 4"; do
  set -- $layout
  SCALE_TIME_SIZES=64,65536,1048576,8388608 run "ops-$1x$2" env SCALE_TIME_SIZES=64,65536,1048576,8388608 \
    SCALE_TIME_REPS=7 scripts/scale.sh "$1" --per-host "$2"
done
unset SCALE_TIME_SIZES
for layout in "32 8" "32 1" "32 32" "16 4" "16 16" "32 2" "32 4"; do
  set -- $layout
  run "init-$1x$2" scripts/scale.sh "$1" --per-host "$2"
done
git rev-parse --short HEAD >"$HERE/commit.txt"
