#!/usr/bin/env bash
# Two emulated hosts joined by a 1 Gbit/s link, and a 64 MiB all_reduce with and
# without wire compression between them (examples/compression_link_bench.py).
#
# Needs root (ip netns, tc). Creates two network namespaces, a veth pair between
# them with private addresses that exist inside the namespaces only, and a tbf
# rate limit on each end; removes all of it on exit, also on failure or Ctrl-C.
# Each rank runs in its own namespace as its own "host" (HCCL_GO_HOST_ID), on the
# veth (HCCL_GO_SOCKET_IFNAME), so the ranks talk TCP over the shaped link and not
# through shared memory. The rendezvous is a FileStore (namespaces share files).
#
#   sudo examples/compression_netns.sh [--mib 64] [--iters 5] [--modes none,fp16,bf16]
#
# Environment: RATE (default 1gbit), PYTHON (default .venv/bin/python), SUBNET
# (default 10.231.7: the /24 used inside the namespaces).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
RATE="${RATE:-1gbit}"
SUBNET="${SUBNET:-10.231.7}"
TAG="hcmp$$"                 # unique names: several runs may coexist
NS=("${TAG}a" "${TAG}b")
IF=("${TAG}va" "${TAG}vb")
WORK="$(mktemp -d /tmp/hccl_go_netns.XXXXXX)"
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for ns in "${NS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done  # takes its veth end along
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

ip netns add "${NS[0]}"
ip netns add "${NS[1]}"
ip link add "${IF[0]}" type veth peer name "${IF[1]}"
for i in 0 1; do
  ip link set "${IF[$i]}" netns "${NS[$i]}"
  ip -n "${NS[$i]}" addr add "$SUBNET.$((i + 1))/24" dev "${IF[$i]}"
  ip -n "${NS[$i]}" link set lo up
  ip -n "${NS[$i]}" link set "${IF[$i]}" up
  tc -n "${NS[$i]}" qdisc add dev "${IF[$i]}" root tbf rate "$RATE" burst 256kb latency 50ms
done
echo "link: ${IF[0]} ($SUBNET.1, ${NS[0]}) <-> ${IF[1]} ($SUBNET.2, ${NS[1]}), tbf $RATE each way" >&2

for i in 0 1; do
  ip netns exec "${NS[$i]}" env \
    HCCL_GO_HOST_ID="emulated-host-$i" HCCL_GO_SOCKET_IFNAME="${IF[$i]}" HCCL_GO_TRANSPORT=tcp \
    "$PYTHON" "$ROOT/examples/compression_link_bench.py" --rank "$i" --world 2 --store "$WORK/store" "$@" &
  PIDS+=("$!")
done
status=0
for pid in "${PIDS[@]}"; do wait "$pid" || status=$?; done
PIDS=()
exit "$status"
