package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// The library shares its host process with PyTorch's compute threads, and
// its Go runtime's threads compete with them for the cores. Every processor
// (P) the runtime may use beyond what the communication needs costs the host:
// whenever a goroutine becomes runnable the runtime wakes a thread for an
// idle P (to spin looking for work, then park again), and those wake-ups
// preempt compute threads. With 2 ranks on 2 cores, a DDP step of a small
// MLP took 1.35-1.56 ms with GOMAXPROCS 2 and 1.01-1.13 ms with 1 (gloo
// 1.19). Ops run on the caller's thread or one worker per stream, so one P
// per rank is enough for them.
//
// The policy, applied at each communicator's init (process-wide):
//   - HCCL_GO_MAXPROCS=n (n > 0): GOMAXPROCS is n (also set when the
//     library loads);
//   - HCCL_GO_MAXPROCS=0: the Go runtime's own default is left alone;
//   - unset, empty or "auto": lowered to max(1, NumCPU / ranks of the
//     communicator on this host), never raised, so a later communicator
//     with fewer local ranks (a subgroup) keeps the lower value.
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

// autoMaxProcs is the automatic value: the cores left to each local rank
// (local <= 0: unknown, all of them).
func autoMaxProcs(cpus, local int) int {
	if local <= 0 {
		return cpus
	}
	return max(1, cpus/local)
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
