#!/usr/bin/env bash
# hccl_go and gloo against Open MPI's shared-memory collectives, on this host, in one table.
#   1. installs what is missing (quiet when all is there): Debian's Open MPI (openmpi-bin,
#      libopenmpi-dev) and mpi4py in .venv, built from source against that Open MPI;
#   2. runs python -m torch_hccl_go.bench --backends hccl_go,gloo --peers mpi: the torch
#      backends in one job, then Open MPI in a job of its own (its program,
#      python/torch_hccl_go/bench/peers/mpi_program.py, under mpirun with pml ob1, btl
#      self,vader: shared memory), same sizes and timing rules, one report;
#   3. prints the Markdown table for the README (bench/mpi/compare.py).
#
#   scripts/mpi_bench.sh [-n RANKS] [--sizes LIST] [--ops LIST] [--iters N|auto]
#                        [--max-time S] [--warmup N] [--jobs N] [--out DIR] [--no-install]
#
#   -n RANKS      world size (default 2); more ranks than cores adds --oversubscribe, which
#                 makes Open MPI yield the core while it waits (slower small ops)
#   --sizes LIST  comma list, binary units (default 8,64K,16M,128M)
#   --ops LIST    comma list of all_reduce, all_gather, broadcast (default, or "all": the three)
#   --iters, --max-time, --warmup   passed to the benchmark (defaults: auto, 1.0, 5)
#   --jobs N      N fresh jobs per library, interleaved, and the spread over them (default: one)
#   --out DIR     keep bench.json and compare.md there (default: a temporary folder)
#   --no-install  fail instead of installing what is missing
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"

N=2
SIZES=8,64K,16M,128M
OPS=all_reduce,all_gather,broadcast
ITERS=auto
MAX_TIME=1.0
WARMUP=5
JOBS=""
OUT=""
INSTALL=1

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case "$1" in
    -n) N="$2"; shift 2 ;;
    --sizes) SIZES="$2"; shift 2 ;;
    --ops) OPS="$2"; shift 2 ;;
    --iters) ITERS="$2"; shift 2 ;;
    --max-time) MAX_TIME="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    -h | --help) usage ;;
    *) echo "mpi_bench: unknown argument $1" >&2; usage ;;
  esac
done


log() { printf '[mpi_bench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# --- 1. what is needed -------------------------------------------------------------------
[[ -x "$PY" ]] || die "no $PY: run scripts/setup.sh first"
"$PY" -c 'import torch_hccl_go' 2>/dev/null || die "torch_hccl_go is not installed in .venv: run scripts/setup.sh"

if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
  ((INSTALL)) || die "Open MPI is missing: apt-get install openmpi-bin libopenmpi-dev"
  ((EUID == 0)) || die "Open MPI is missing and installing it needs root: sudo apt-get install openmpi-bin libopenmpi-dev"
  log "installing Open MPI (apt-get install openmpi-bin libopenmpi-dev)"
  apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null; }
fi
mpirun --version 2>/dev/null | grep -q "Open MPI" || die "mpirun is not Open MPI's: $(mpirun --version 2>&1 | head -1)"

if ! "$PY" -c 'import mpi4py' 2>/dev/null; then
  ((INSTALL)) || die "mpi4py is missing: .venv/bin/pip install --no-binary mpi4py mpi4py"
  # --no-binary: a wheel would bring its own MPI; the one measured must be Debian's.
  log "building mpi4py against $(command -v mpicc) (a few minutes)"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-binary mpi4py mpi4py
fi
LIB="$(mpirun -n 1 --allow-run-as-root "$PY" -c 'from mpi4py import MPI; print(MPI.Get_library_version().strip("\0 \n"))' 2>&1 | head -1)"
[[ "$LIB" == "Open MPI"* ]] ||
  die "mpi4py uses another MPI ($LIB): .venv/bin/pip install --force-reinstall --no-binary mpi4py mpi4py"

# --- 2. one run: hccl_go and gloo, then Open MPI ----------------------------------------
if [[ -z "$OUT" ]]; then
  OUT="$(mktemp -d)"
  trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"

[[ "$OPS" == all ]] && OPS=all_reduce,all_gather,broadcast
BENCH=(-m torch_hccl_go.bench --world-size "$N" --backends hccl_go,gloo --peers mpi --no-progress
  --sizes "$SIZES" --ops "$OPS" --iters "$ITERS" --max-time "$MAX_TIME" --warmup "$WARMUP")
[[ -n "$JOBS" ]] && BENCH+=(--jobs "$JOBS")
log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
log "$PY ${BENCH[*]} --json $OUT/bench.json"
rc=0
"$PY" "${BENCH[@]}" --json "$OUT/bench.json" || rc=$?
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- 3. the README's table -----------------------------------------------------------------
echo
"$PY" bench/mpi/compare.py "$OUT/bench.json" | tee "$OUT/compare.md"
exit "$rc"
