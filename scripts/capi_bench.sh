#!/usr/bin/env bash
# all_reduce through the C API alone (no torch): builds libhccl_go.so and
# bench/capi/capi_bench.c, starts NRANKS processes on this host, and prints
# an nccl-tests style table from rank 0.
#   scripts/capi_bench.sh [NRANKS [MIN_BYTES MAX_BYTES FACTOR]]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-2}"
shift || true
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
cd "$ROOT"
go build -buildmode=c-shared -trimpath -ldflags=-extldflags=-Wl,-soname,libhccl_go.so -o "$OUT/libhccl_go.so" ./export
gcc -O2 -Wall -o "$OUT/capi_bench" bench/capi/capi_bench.c -Iinclude -L"$OUT" -lhccl_go -Wl,-rpath,"$OUT"
mkdir "$OUT/rv"
pids=()
for ((r = 1; r < N; r++)); do
  "$OUT/capi_bench" "$r" "$N" "$OUT/rv" "$@" &
  pids+=($!)
done
"$OUT/capi_bench" 0 "$N" "$OUT/rv" "$@"
for p in "${pids[@]}"; do wait "$p"; done
