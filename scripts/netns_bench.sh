#!/usr/bin/env bash
# hccl_go against gloo across emulated hosts: network namespaces joined by tc-shaped veth
# links, every job launched with torchrun (one agent per emulated host), both backends in
# the same job (python -m torch_hccl_go.bench and torch_hccl_go.overlap interleave them).
#
#   sudo scripts/netns_bench.sh [CASE ...]          (default: single 2x2 fastpairs8)
#
# Cases (each sets up its namespaces, runs its jobs, and removes them):
#   single      one host, 2 ranks: all_reduce 64 MiB in the shared-memory arena (hccl_go only),
#               the reference for the arena phases of the multi-host jobs
#   2x2         2 hosts x 2 ranks, one veth at RATE (1gbit) each way:
#                 all_reduce 64 MiB; the same with HCCL_GO_COMPRESSION=fp16;
#                 all_gather and reduce_scatter 64 MiB;
#                 DDP with 25 MB of float32 gradients (torch_hccl_go.overlap, MLP), then fp16;
#                 the hierarchical all_reduce's phases (bench/hier_phases.py)
#   2x2ddp      2x2's DDP jobs alone
#   2x2phases   2x2's hierarchical all_reduce phases alone (bench/hier_phases.py)
#   2x2split    2x2's all_reduce 64 MiB on a split of the default group, a split forced to the
#               ring, a group with its own links, the default group and gloo (bench/split_hier.py)
#   single2     two single-host jobs of 2 ranks at once (the arena under 2x2's load)
#   2x2timeline where a DDP step's time goes on 2x2, hccl_go and gloo (bench/ddp_timeline.py)
#   fastpairs8  8 hosts x 1 rank, 28 veths: pairs (0,4) (1,5) (2,6) (3,7) at 300 Mbit/s, the
#               others at 100 Mbit/s: all_reduce 64 MiB
#
# Raw JSON and logs go to OUT (default bench/results/<date>/); summary.txt there reads them
# (scripts/netns_bench_summary.py). Holds /tmp/netns.lock and /tmp/bench.lock throughout.
# Namespaces carry a random prefix and are deleted on exit, on failure and on Ctrl-C.
#
# Environment: OUT, RATE (2x2's link, default 1gbit), ITERS (timed iterations of the bench,
# default 8), DDP_STEPS (default 10), PYTHON (default .venv/bin/python), MASTER_PORT (29611);
# HCCL_GO_* variables reach every rank.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
TORCHRUN="$(dirname "$PYTHON")/torchrun"
OUT="${OUT:-$ROOT/bench/results/$(date +%F)}"
RATE="${RATE:-1gbit}"
ITERS="${ITERS:-8}"
DDP_STEPS="${DDP_STEPS:-10}"
MASTER_PORT="${MASTER_PORT:-29611}"
TAG="nb$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"  # namespaces: ${TAG}h0, ${TAG}h1, ...
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(single 2x2 fastpairs8)
PIDS=()

mkdir -p "$OUT/raw" "$OUT/logs"
exec 8>/tmp/netns.lock
flock 8
exec 9>/tmp/bench.lock
flock 9

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for ns in $(ip netns list | awk '{print $1}' | grep "^$TAG" || true); do
    ip netns del "$ns" 2>/dev/null || true # takes its veth ends along
  done
}
trap cleanup EXIT INT TERM

log() { echo "[netns_bench $(date +%T)] $*" >&2; }

# host I: namespace ${TAG}hI with loopback up.
add_host() {
  ip netns add "${TAG}h$1"
  ip -n "${TAG}h$1" link set lo up
}

# link A DEV_A B DEV_B RATE BURST: a veth between hosts A and B, both ends shaped to RATE.
link() {
  local rate=$5 burst=$6
  ip link add "$2" netns "${TAG}h$1" type veth peer name "$4" netns "${TAG}h$3"
  ip -n "${TAG}h$1" link set "$2" up
  ip -n "${TAG}h$3" link set "$4" up
  tc -n "${TAG}h$1" qdisc add dev "$2" root tbf rate "$rate" burst "$burst" latency 100ms
  tc -n "${TAG}h$3" qdisc add dev "$4" root tbf rate "$rate" burst "$burst" latency 100ms
}

# job NAME NNODES NPROC IFNAME MASTER_ADDR [VAR=VALUE ...] -- ARGS...: torchrun on hosts
# 0..NNODES-1 at once (node rank = host), NPROC ranks each, ARGS after torchrun's own; logs
# in OUT/logs/NAME-hostI.log. Fails if any host's torchrun fails.
job() {
  local name=$1 nnodes=$2 nproc=$3 ifname=$4 master=$5
  shift 5
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  log "$name: ${vars[*]} $*"
  PIDS=()
  for ((i = 0; i < nnodes; i++)); do
    ip netns exec "${TAG}h$i" env HCCL_GO_HOST_ID="emulated-host-$i" HCCL_GO_SOCKET_IFNAME="$ifname" \
      GLOO_SOCKET_IFNAME="$ifname" OMP_NUM_THREADS=1 "${vars[@]}" \
      "$TORCHRUN" --nnodes "$nnodes" --node_rank "$i" --nproc_per_node "$nproc" \
      --master_addr "$master" --master_port "$MASTER_PORT" "$@" >"$OUT/logs/$name-host$i.log" 2>&1 &
    PIDS+=("$!")
  done
  local status=0
  for pid in "${PIDS[@]}"; do wait "$pid" || status=$?; done
  PIDS=()
  MASTER_PORT=$((MASTER_PORT + 1))
  if [ "$status" -ne 0 ]; then
    log "$name failed (status $status); see $OUT/logs/$name-host*.log"
    tail -n 20 "$OUT/logs/$name-host0.log" >&2
    return "$status"
  fi
  sed -n '/^#\|^ *[a-z_]*  *[0-9]/p' "$OUT/logs/$name-host0.log" | tail -n 12 >&2 || true
}

bench_args=(-m torch_hccl_go.bench --iters "$ITERS" --warmup 1 --sizes 64MiB --no-progress)
ddp_args=(-m torch_hccl_go.overlap --model mlp --inputs 1024 --width 1024 --depth 5 --batch 8
  --bucket-cap-mb 25 --steps "$DDP_STEPS" --warmup 2 --threads 1)

case_single() {
  log "single: 2 ranks on one host"
  "$PYTHON" -m torch_hccl_go.bench --ops all_reduce --backends hccl_go --sizes 64MiB --iters "$ITERS" \
    --warmup 1 --no-progress --json "$OUT/raw/single_allreduce.json" >"$OUT/logs/single.log" 2>&1
  tail -n 3 "$OUT/logs/single.log" >&2
}

# job_2x2_phases: the hierarchical all_reduce's phases on the 2x2 hosts (bench/hier_phases.py).
job_2x2_phases() {
  job 2x2_phases 2 2 va 10.231.1.1 -- "$ROOT/bench/hier_phases.py" --size 64MiB --iters "$ITERS" \
    --json "$OUT/raw/2x2_phases.json"
}

# setup_2x2: hosts 0 and 1 joined by one shaped veth (see case_2x2).
setup_2x2() {
  add_host 0
  add_host 1
  # One veth, named va at both ends (GLOO_SOCKET_IFNAME takes one exact name for every rank).
  ip link add va netns "${TAG}h0" type veth peer name vb netns "${TAG}h1"
  ip -n "${TAG}h1" link set vb name va
  for i in 0 1; do
    ip -n "${TAG}h$i" addr add "10.231.1.$((i + 1))/24" dev va
    ip -n "${TAG}h$i" link set va up
    tc -n "${TAG}h$i" qdisc add dev va root tbf rate "$RATE" burst 256kb latency 100ms
  done
  log "2x2: hosts ${TAG}h0, ${TAG}h1 joined at $RATE each way"
}

case_2x2() {
  setup_2x2
  local m=10.231.1.1
  job 2x2_allreduce 2 2 va $m -- "${bench_args[@]}" --ops all_reduce --json "$OUT/raw/2x2_allreduce.json"
  job 2x2_allreduce_fp16 2 2 va $m HCCL_GO_COMPRESSION=fp16 -- "${bench_args[@]}" --ops all_reduce \
    --json "$OUT/raw/2x2_allreduce_fp16.json"
  job 2x2_movement 2 2 va $m -- "${bench_args[@]}" --ops all_gather,reduce_scatter \
    --json "$OUT/raw/2x2_movement.json"
  job 2x2_ddp 2 2 va $m -- "${ddp_args[@]}" --json "$OUT/raw/2x2_ddp.json"
  job 2x2_ddp_fp16 2 2 va $m HCCL_GO_COMPRESSION=fp16 -- "${ddp_args[@]}" --json "$OUT/raw/2x2_ddp_fp16.json"
  job_2x2_phases
  ip netns del "${TAG}h0"
  ip netns del "${TAG}h1"
}

# case_2x2ddp: only 2x2's DDP jobs (float32, then fp16).
case_2x2ddp() {
  setup_2x2
  local m=10.231.1.1
  job 2x2_ddp 2 2 va $m -- "${ddp_args[@]}" --json "$OUT/raw/2x2_ddp.json"
  job 2x2_ddp_fp16 2 2 va $m HCCL_GO_COMPRESSION=fp16 -- "${ddp_args[@]}" --json "$OUT/raw/2x2_ddp_fp16.json"
  ip netns del "${TAG}h0"
  ip netns del "${TAG}h1"
}

# case_2x2phases: only 2x2's hierarchical all_reduce phases (at RATE; a high RATE, e.g. 100gbit,
# leaves the arena phases alone, in one round, with the link no bottleneck).
case_2x2phases() {
  setup_2x2
  job_2x2_phases
  ip netns del "${TAG}h0"
  ip netns del "${TAG}h1"
}

# case_2x2split: all_reduce on groups split from the default group across the 2x2 hosts.
case_2x2split() {
  setup_2x2
  job 2x2_split 2 2 va 10.231.1.1 -- "$ROOT/bench/split_hier.py" --size 64MiB --iters "$ITERS" \
    --json "$OUT/raw/2x2_split.json"
  ip netns del "${TAG}h0"
  ip netns del "${TAG}h1"
}

# case_single2: two single-host jobs of 2 ranks at once, the arena reference under the same
# load as 2x2's (two hosts' arena phases running together on this machine's cores).
case_single2() {
  log "single2: two jobs of 2 ranks on one host, at once"
  local pids=() j
  for j in 0 1; do
    "$PYTHON" -m torch_hccl_go.bench --ops all_reduce --backends hccl_go --sizes 64MiB --iters "$ITERS" \
      --warmup 1 --no-progress \
      --json "$OUT/raw/single2_allreduce_$j.json" >"$OUT/logs/single2_$j.log" 2>&1 &
    pids+=("$!")
  done
  for j in "${pids[@]}"; do wait "$j"; done
  tail -n 3 "$OUT/logs/single2_0.log" "$OUT/logs/single2_1.log" >&2
}

# case_2x2timeline: where a DDP step's time goes on 2x2, hccl_go and gloo (bench/ddp_timeline.py).
case_2x2timeline() {
  setup_2x2
  job 2x2_timeline 2 2 va 10.231.1.1 -- "$ROOT/bench/ddp_timeline.py" --json "$OUT/raw/2x2_timeline.json"
  sed -n '/^# DDP step timeline/,/^ *gloo /p' "$OUT/logs/2x2_timeline-host0.log" >&2
  ip netns del "${TAG}h0"
  ip netns del "${TAG}h1"
}

case_fastpairs8() {
  local n=8 i j
  for ((i = 0; i < n; i++)); do
    add_host $i
    # The host's address, on a device of its own (routes below pick the link per peer).
    ip -n "${TAG}h$i" link add d0 type veth peer name d0p
    ip -n "${TAG}h$i" addr add "10.231.0.$((i + 1))/32" dev d0
    ip -n "${TAG}h$i" link set d0 up
    ip -n "${TAG}h$i" link set d0p up
  done
  for ((i = 0; i < n; i++)); do
    for ((j = i + 1; j < n; j++)); do
      local rate=100mbit burst=64kb
      if [ $((j - i)) -eq 4 ]; then rate=300mbit burst=128kb; fi
      link $i "p$j" $j "p$i" $rate $burst
      ip -n "${TAG}h$i" route add "10.231.0.$((j + 1))/32" dev "p$j" src "10.231.0.$((i + 1))"
      ip -n "${TAG}h$j" route add "10.231.0.$((i + 1))/32" dev "p$i" src "10.231.0.$((j + 1))"
    done
  done
  log "fastpairs8: 8 hosts, (i, i+4) at 300 Mbit/s, the rest at 100 Mbit/s"
  job fastpairs8_allreduce $n 1 d0 10.231.0.1 -- "${bench_args[@]}" --iters 3 --ops all_reduce \
    --timeout 900 --json "$OUT/raw/fastpairs8_allreduce.json"
  for ((i = 0; i < n; i++)); do ip netns del "${TAG}h$i"; done
}

git -C "$ROOT" rev-parse --short HEAD >"$OUT/commit" 2>/dev/null || true
for c in "${CASES[@]}"; do
  "case_$c"
done
"$PYTHON" "$ROOT/scripts/netns_bench_summary.py" "$OUT" | tee "$OUT/summary.txt"
