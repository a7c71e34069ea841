package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// The library shares its host process with PyTorch's compute threads, and
// its Go runtime's threads compete with them for the cores: whenever a
// goroutine becomes runnable the runtime may wake a thread for an idle
// processor (P), to spin looking for work and park again, and those
// wake-ups preempt compute threads. Ops run on the caller's thread or one
// worker per stream, so a few Ps per rank are enough.
//
// One P per rank is too few, though. Measured with 2 ranks on 2 cores
// (GOMAXPROCS 1 against 2): the C API's 8-byte all_reduce 3.4-3.7 against
// 2.8-3.0 µs, a synchronous 16 MiB all_reduce 5.5-6.1 against 6.6-6.9
// GB/s, DDP on a 50 MB model 106-117 against 101-102 ms a step; only DDP
// on a tiny MLP (a 67 KB bucket, 1 ms steps) gains, 1.0-1.1 against
// 1.3-1.4 ms. With one P, the runtime's own work lands on the op's
// critical path: garbage collection assists, the hand-off and back when
// the runtime preempts the C thread that runs an op inline (every 10 ms of
// Go time, since that thread never goes through the scheduler), and
// processor retakes during cgo reduction kernels. So the automatic value
// never goes below 2; HCCL_GO_MAXPROCS=1 suits latency-bound jobs with
// tiny models.
//
// The policy, applied at each communicator's init (process-wide):
//   - HCCL_GO_MAXPROCS=n (n > 0): GOMAXPROCS is n (also set when the
//     library loads);
//   - HCCL_GO_MAXPROCS=0: the Go runtime's own default is left alone;
//   - unset, empty or "auto": lowered to NumCPU / ranks of the
//     communicator on this host, but not below 2 (nor above NumCPU); never
//     raised, so a later communicator with fewer local ranks (a subgroup)
//     keeps the lower value.
const maxProcsVar = "HCCL_GO_MAXPROCS"

// explicitMaxProcs parses HCCL_GO_MAXPROCS: n > 0 to set, 0 to leave the
// runtime's default, -1 for the automatic policy.
func explicitMaxProcs(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" || strings.EqualFold(v, "auto") {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a number of processors >= 0 or \"auto\"", maxProcsVar, v)
	}
	return n, nil
}

// applyMaxProcs sets GOMAXPROCS for a communicator whose rank rank has the
// given host ids (nil: locality unknown, the automatic policy does nothing).
func applyMaxProcs(hostIDs []string, rank int) error {
	v, _ := cGetenv(maxProcsVar)
	n, err := explicitMaxProcs(v)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if n < 0 {
		n = autoMaxProcs(runtime.NumCPU(), localRanks(hostIDs, rank))
		if n >= runtime.GOMAXPROCS(0) {
			return nil // never raise: another communicator may have lowered it
		}
	}
	if n != runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
	return nil
}

// minAutoMaxProcs is the fewest Ps the automatic policy leaves (see above).
const minAutoMaxProcs = 2

// autoMaxProcs is the automatic value: the cores left to each local rank,
// at least minAutoMaxProcs (local <= 0: unknown, all of them).
func autoMaxProcs(cpus, local int) int {
	if local <= 0 {
		return cpus
	}
	return min(cpus, max(minAutoMaxProcs, cpus/local))
}

// localRanks counts the ranks that share rank's host (0 when unknown).
func localRanks(hostIDs []string, rank int) int {
	if rank < 0 || rank >= len(hostIDs) || hostIDs[rank] == "" {
		return 0
	}
	n := 0
	for _, h := range hostIDs {
		if h == hostIDs[rank] {
			n++
		}
	}
	return n
}
