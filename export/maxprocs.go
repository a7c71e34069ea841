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
// But every C thread that calls into the library keeps a P between calls:
// the runtime counts it as in a system call (the issuing thread, and each
// completion thread of the c10d backend). When no P is idle, the runtime's
// monitor thread (sysmon) takes one of those away at its next look, every
// 20 µs, and each take-over puts sysmon back to looking every 20 µs: a
// storm of preemptions and P hand-offs. With 2 Ps, DDP's two calling
// threads (the training loop and a completion thread) held both, and the
// main job's 1.4-1.6 ms steps took 0.74-0.80 ms with 3 Ps (and the
// processor refresh of processor.go; gloo: 1.25). So the automatic value
// never goes below minAutoMaxProcs, even above the host's core count (an
// idle P costs nothing). HCCL_GO_MAXPROCS=1 or 2 is still there for jobs
// measured to run better with fewer.
//
// The policy, applied at each communicator's init (process-wide):
//   - HCCL_GO_MAXPROCS=n (n > 0): GOMAXPROCS is n (also set when the
//     library loads);
//   - HCCL_GO_MAXPROCS=0: the Go runtime's own default is left alone;
//   - unset, empty or "auto": the cores left to each rank on this host
//     (NumCPU / local ranks), but not below minAutoMaxProcs; it lowers
//     GOMAXPROCS, and raises it only to that floor, so a later communicator
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
// given host ids (nil: locality unknown, the automatic policy takes all the
// cores).
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
		if cur := runtime.GOMAXPROCS(0); cur >= minAutoMaxProcs && n >= cur {
			return nil // raise only to the floor: another communicator may have lowered it
		}
	}
	if n != runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
	return nil
}

// minAutoMaxProcs is the fewest Ps the automatic policy leaves (see above):
// one for the issuing thread, one for a completion thread, one idle.
const minAutoMaxProcs = 3

// autoMaxProcs is the automatic value: the cores left to each local rank
// (local <= 0: unknown, all of them), at least minAutoMaxProcs.
func autoMaxProcs(cpus, local int) int {
	if local <= 0 {
		return max(minAutoMaxProcs, cpus)
	}
	return max(minAutoMaxProcs, cpus/local)
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
