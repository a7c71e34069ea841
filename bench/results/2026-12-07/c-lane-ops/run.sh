#!/usr/bin/env bash
# Before/after the C lane's broadcast, all_gather, reduce, reduce_scatter and barrier,
# under one install: the library built from the commit before (BEFORE_LIB) and from the
# commit after (AFTER_LIB) swapped in turn into python/torch_hccl_go/lib/, jobs
# interleaved, each job `python -m torch_hccl_go.bench --history` and a warm run.
#   BEFORE_LIB=/tmp/old/libhccl_go.so AFTER_LIB=/tmp/new/libhccl_go.so \
#     bench/results/2026-12-07/c-lane-ops/run.sh OUTDIR
# HISTORY_SIZES (default 64K,1M) and WARM_SIZES (default 8,64K,256K,1M) set the sizes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)"
OUT="${1:?output directory}"
mkdir -p "$OUT"
cd "$ROOT"
LIB=python/torch_hccl_go/lib/libhccl_go.so
cp "$LIB" "$OUT/.installed.so"
trap 'cp "$OUT/.installed.so" "$LIB"; rm -f "$OUT/.installed.so"' EXIT
OPS=broadcast,all_gather,reduce_scatter,reduce
for i in 1 2 3; do
  for v in after before; do
    if [[ $v == after ]]; then cp "$AFTER_LIB" "$LIB"; else cp "$BEFORE_LIB" "$LIB"; fi
    .venv/bin/python -m torch_hccl_go.bench --history --ops "$OPS" --sizes "${HISTORY_SIZES:-64K,1M}" --backends hccl_go \
      --max-time 0.3 --json "$OUT/history_${v}_$i.json" > "$OUT/history_${v}_$i.txt" 2>&1
    .venv/bin/python -m torch_hccl_go.bench --ops "$OPS" --sizes "${WARM_SIZES:-8,64K,256K,1M}" --backends hccl_go \
      --max-time 0.2 --json "$OUT/warm_${v}_$i.json" > "$OUT/warm_${v}_$i.txt" 2>&1
  done
done
