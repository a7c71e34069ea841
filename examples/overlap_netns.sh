#!/usr/bin/env bash
# Compute/communication overlap where communication is network-bound: two
# emulated hosts (network namespaces) joined by a veth pair shaped with tc
# tbf, one rank each, running `python -m torch_hccl_go.overlap` (hccl_go and
# gloo in the same run). Needs root (ip netns, tc). The addresses exist only
# inside the two namespaces, which are deleted on exit.
#
#   sudo examples/overlap_netns.sh                  # the README's configuration
#   RATE=200mbit MTU=9000 sudo -E examples/overlap_netns.sh --json out.json
#
# Environment: RATE (default 100mbit: the 4 MiB of gradients then take
# about as long on the link as a step's compute, the regime where overlap
# matters); MTU (default 1500: standard Ethernet frames, what most networks
# carry; the per-packet kernel work lands on the ranks' own cores, so the
# receive path's wake-ups count. At 9000 (jumbo frames) that work shrinks
# sixfold and hccl_go and gloo are level); PIN (default 1: rank
# r and all its threads, the Go runtime's included, on CPUs [r*THREADS,
# (r+1)*THREADS) via taskset; 0: unpinned); HCCL_GO_MAXPROCS (default 1;
# set it empty to let Go use every core); THREADS (torch threads per rank, default nproc/2);
# PRIORITY (e.g. -10: each rank runs in a scheduling autogroup of its own
# with that nice value, which shields the measurement from other sessions'
# load on a shared machine; default: unchanged); PYTHON (default
# .venv/bin/python). Other HCCL_GO_* variables and OVERLAP_ARGS pass
# through; extra arguments go to torch_hccl_go.overlap.
set -euo pipefail

cd "$(dirname "$0")/.."
RATE=${RATE:-100mbit}
MTU=${MTU:-1500}
PIN=${PIN:-1}
PRIORITY=${PRIORITY:-}
PYTHON=${PYTHON:-.venv/bin/python}
THREADS=${THREADS:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}
export HCCL_GO_MAXPROCS=${HCCL_GO_MAXPROCS-1}
[ -n "$HCCL_GO_MAXPROCS" ] || unset HCCL_GO_MAXPROCS
NS=hgov$$
A=${NS}a
B=${NS}b
ADDR_A=10.199.66.1
ADDR_B=10.199.66.2
PORT=29566

cleanup() {
	for pid in ${PIDS:-}; do kill "$pid" 2>/dev/null || true; done
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$A"
ip netns add "$B"
ip link add veth-a netns "$A" type veth peer name veth-b netns "$B"
ip -n "$A" addr add "$ADDR_A/24" dev veth-a
ip -n "$B" addr add "$ADDR_B/24" dev veth-b
for ns in "$A" "$B"; do
	ip -n "$ns" link set lo up
done
ip -n "$A" link set veth-a mtu "$MTU" up
ip -n "$B" link set veth-b mtu "$MTU" up
# Shape both directions; the burst fits the kernel timer granularity.
tc -n "$A" qdisc add dev veth-a root tbf rate "$RATE" burst 64kb latency 100ms
tc -n "$B" qdisc add dev veth-b root tbf rate "$RATE" burst 64kb latency 100ms

run_rank() { # rank namespace device slot (slot s gets CPUs [s*THREADS, (s+1)*THREADS))
	local pin=()
	if [ "$PIN" = 1 ]; then pin=(taskset -c "$(( $4 * THREADS ))-$(( $4 * THREADS + THREADS - 1 ))"); fi
	local cmd=(ip netns exec "$2" env RANK="$1" WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR="$ADDR_A" MASTER_PORT="$PORT"
		HCCL_GO_HOST_ID="host$1" HCCL_GO_SOCKET_IFNAME="$3" GLOO_SOCKET_IFNAME="$3"
		"${pin[@]}" "$PYTHON" -m torch_hccl_go.overlap --threads "$THREADS" ${OVERLAP_ARGS:-} "${@:5}")
	if [ -n "$PRIORITY" ]; then
		# A new session is a new autogroup; its nice value weighs it against
		# the other sessions' groups.
		cmd=(setsid sh -c 'echo "$0" > /proc/self/autogroup && exec "$@"' "$PRIORITY" "${cmd[@]}")
	fi
	"${cmd[@]}" &
	PIDS="${PIDS:-} $!"
}

echo "# two hosts, link $RATE each way (tc tbf), MTU $MTU, PIN=$PIN, THREADS=$THREADS, PRIORITY=${PRIORITY:-unchanged}, HCCL_GO_MAXPROCS=${HCCL_GO_MAXPROCS:-unset}, load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
run_rank 0 "$A" veth-a 0 "$@"
run_rank 1 "$B" veth-b 1 "$@"
status=0
for pid in $PIDS; do
	wait "$pid" || status=$?
done
PIDS=
exit $status
