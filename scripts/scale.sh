#!/usr/bin/env bash
# A scale run through the C API alone (no torch): builds libhccl_go.so and
# bench/scale/scale_rank.c, starts N rank processes on this machine, and
# prints what each rank cost (init time, every collective checked, a split,
# sockets, threads and memory per rank) as a table (bench/scale/report.py).
#
#   scripts/scale.sh N [--per-host K] [--torch] [--json OUT] [--timeout S]
#
# --torch: the ranks are a torchrun job of bench/scale/torch_rank.py with
# backend hccl_go (the same checks through torch.distributed, new_group for
# the split; python from .venv, or $PYTHON).
# --per-host K: ranks r with the same r / K share an emulated host (shared
# memory inside it, TCP over loopback between hosts); default N (one host).
# Exits non-zero when a rank fails, a check fails or the run exceeds the
# timeout (default 600 s); the ranks' stderr is printed then. SCALE_KEEP=1
# keeps the run's directory (binaries, records, every rank's stderr).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:?usage: scripts/scale.sh N [--per-host K] [--torch] [--json OUT] [--timeout S]}"
shift
PER_HOST="$N"
JSON=""
TIMEOUT=600
TORCH=0
while (($#)); do
  case "$1" in
    --torch) TORCH=1; shift ;;
    --per-host) PER_HOST="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    *) echo "scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if ((N < 2 || PER_HOST < 1)); then
  echo "scale.sh: need N >= 2 and --per-host >= 1" >&2
  exit 2
fi
OUT="$(mktemp -d)"
pids=()
cleanup() {
  # TERM first: torchrun passes it on to its ranks.
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && sleep 1 && kill -9 "$p" 2>/dev/null; done || true
  if [[ -n "${SCALE_KEEP:-}" ]]; then echo "scale.sh: kept $OUT" >&2; else rm -rf "$OUT"; fi
}
trap cleanup EXIT
cd "$ROOT"
mkdir "$OUT/rv"
# Each rank holds a socket per peer and stream; leave room above that.
want=$((4 * N + 256))
if (($(ulimit -n) < want)); then ulimit -n "$want" 2>/dev/null || true; fi
export HCCL_GO_JOB_SECRET="${HCCL_GO_JOB_SECRET:-scale-run}"
if ((TORCH)); then
  PY="${PYTHON:-$ROOT/.venv/bin/python}"
  OMP_NUM_THREADS=1 "$PY" -m torch.distributed.run --standalone --nproc-per-node "$N" \
    bench/scale/torch_rank.py "$OUT/rv" --per-host "$PER_HOST" >"$OUT/rv/stderr-torchrun" 2>&1 &
  pids+=($!)
else
  go build -buildmode=c-shared -trimpath -ldflags=-extldflags=-Wl,-soname,libhccl_go.so -o "$OUT/libhccl_go.so" ./export
  gcc -O2 -Wall -o "$OUT/scale_rank" bench/scale/scale_rank.c -Iinclude -L"$OUT" -lhccl_go -Wl,-rpath,"$OUT"
  for ((r = 0; r < N; r++)); do
    "$OUT/scale_rank" "$r" "$N" "$PER_HOST" "$OUT/rv" 2>"$OUT/rv/stderr-$r" &
    pids+=($!)
  done
fi
deadline=$((SECONDS + TIMEOUT))
failed=0
for p in "${pids[@]}"; do
  while kill -0 "$p" 2>/dev/null; do
    if ((SECONDS > deadline)); then
      echo "scale.sh: the run took longer than ${TIMEOUT}s; killing the ranks" >&2
      failed=1
      break 2
    fi
    sleep 0.2
  done
  wait "$p" || failed=1
done
if ((failed)); then
  # The ranks' own verdicts first (the first failure causes the others).
  grep -h "^scale_rank\|Error" "$OUT"/rv/stderr-* 2>/dev/null | head -n 10 >&2 || true
  cat "$OUT"/rv/stderr-* 2>/dev/null | grep -v "^scale_rank" | tail -n 20 >&2 || true
fi
report=0
python3 bench/scale/report.py "$OUT/rv" ${JSON:+--json "$JSON"} || report=$?
exit $((failed ? 1 : report))
