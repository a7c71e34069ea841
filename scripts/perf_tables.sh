#!/usr/bin/env bash
# Re-measures the single-host tables of docs/performance.md at the checked-out commit and
# keeps, per table, the command, its whole output and the raw JSON:
#   bench/results/DATE/NAME/{command,commit,out.txt,bench.json}
#
#   scripts/perf_tables.sh [NAME ...]     (default: every table)
#
# Tables:
#   allreduce-gloo  all_reduce 8 B .. 512 MiB, hccl_go against gloo, world 2
#   other-ops       all_gather, reduce_scatter, broadcast, all_to_all, reduce, 8 B .. 128 MiB
#   small-ops       8 B all_reduce in 5 separate runs (each its own job)
#   capi            8 B all_reduce through the C API alone, 5 runs
#   world4          every op at world 4 (4 ranks on this machine's cores: relative speed only)
#   mpi             all_reduce, all_gather, broadcast against Open MPI (scripts/mpi_bench.sh)
#
# Needs scripts/setup.sh first (and root for the mpi table's Open MPI install). Takes
# about 30 minutes for every table. Run it on a machine with nothing else running: the
# tables compare libraries in the same run, but a loaded machine moves every figure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || { echo "perf_tables: run scripts/setup.sh first" >&2; exit 1; }
DATE="$(date -u +%F)"
COMMIT="$(git rev-parse --short HEAD)"
BENCH=("$PY" -m torch_hccl_go.bench --no-progress)

# run NAME CMD...: runs CMD (whose "{json}" becomes the table's bench.json) into the folder.
run() {
  local name="$1"
  shift
  local dir="bench/results/$DATE/$name"
  mkdir -p "$dir"
  local args=()
  for a in "$@"; do args+=("${a//\{json\}/$dir/bench.json}"); done
  printf '%s\n' "${args[*]}" >"$dir/command"
  echo "$COMMIT" >"$dir/commit"
  echo "[perf_tables] $name: ${args[*]}" >&2
  "${args[@]}" 2>&1 | tee "$dir/out.txt"
}

# runs NAME N CMD...: N runs of CMD, each appended to out.txt (and bench-K.json).
runs() {
  local name="$1" n="$2"
  shift 2
  local dir="bench/results/$DATE/$name"
  mkdir -p "$dir"
  : >"$dir/out.txt"
  echo "$COMMIT" >"$dir/commit"
  printf '%s   (%d runs)\n' "$*" "$n" >"$dir/command"
  for ((k = 1; k <= n; k++)); do
    local args=()
    for a in "$@"; do args+=("${a//\{json\}/$dir/bench-$k.json}"); done
    echo "[perf_tables] $name run $k: ${args[*]}" >&2
    { echo "=== run $k"; "${args[@]}" 2>&1; } | tee -a "$dir/out.txt"
  done
}

table() {
  case "$1" in
    allreduce-gloo) run "$1" "${BENCH[@]}" --ops all_reduce --json '{json}' ;;
    other-ops)
      run "$1" "${BENCH[@]}" --ops all_gather,reduce_scatter,broadcast,all_to_all,reduce \
        --sizes 8B:128MiB:16 --max-time 0.5 --json '{json}'
      ;;
    small-ops) runs "$1" 5 "${BENCH[@]}" --ops all_reduce --sizes 8 --json '{json}' ;;
    capi) runs "$1" 5 bash scripts/capi_bench.sh 2 8 8 4 ;;
    world4)
      run "$1" "${BENCH[@]}" -n 4 --ops all_reduce,all_gather,reduce_scatter,broadcast,all_to_all \
        --sizes 8B:128MiB:16 --max-time 0.3 --json '{json}'
      ;;
    mpi)
      local dir="bench/results/$DATE/mpi"
      run "$1" bash scripts/mpi_bench.sh --out "$dir" --max-time 0.5
      ;;
    *) echo "perf_tables: unknown table $1" >&2; exit 2 ;;
  esac
}

names=("$@")
((${#names[@]})) || names=(allreduce-gloo other-ops small-ops capi world4 mpi)
for t in "${names[@]}"; do table "$t"; done
