package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
// storm of preemptions and P hand-offs. With 2 Ps, DDP's calling threads
// (the training loop and one or two completion threads) held them all, and
// the main job's 1.4-1.6 ms steps took 0.7-0.9 ms with one P to spare
// (and the processor refresh of processor.go; gloo: 1.1-1.6). So the
// automatic value keeps one P more than the threads that have called in,
// even above the host's core count (an idle P costs nothing), and grows
// with them (C threads are counted by hccl_go.c on their first call).
//
// The policy (process-wide, like GOMAXPROCS):
//   - HCCL_GO_MAXPROCS=n (n > 0): GOMAXPROCS is n (set when the library
//     loads and at each communicator's init);
//   - HCCL_GO_MAXPROCS=0: the Go runtime's own default is left alone;
//   - unset, empty or "auto": from the first communicator's init on, the
//     larger of the cores left to each rank on this host (NumCPU / local
//     ranks, the lowest over the communicators so far: a subgroup with
//     fewer local ranks keeps it) and the calling threads + 1, at least 2
//     and at most maxAutoMaxProcs.
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
	switch {
	case n > 0:
		runtime.GOMAXPROCS(n)
	case n < 0:
		procs.apply(autoMaxProcs(runtime.NumCPU(), localRanks(hostIDs, rank)))
	}
	return nil
}

// Bounds of the automatic value.
const (
	minAutoMaxProcs = 2
	maxAutoMaxProcs = 32
)

// autoMaxProcs is the cores left to each local rank (local <= 0: unknown,
// all of them), at least 1.
func autoMaxProcs(cpus, local int) int {
	if local <= 0 {
		return max(1, cpus)
	}
	return max(1, cpus/local)
}

// procPolicy is the automatic policy's state. It is process-wide because
// GOMAXPROCS is: every communicator of the process shares it.
type procPolicy struct {
	mu      sync.Mutex
	cores   int // the lowest cores-per-rank a communicator asked for (0: no communicator yet)
	threads int // C threads that have called into the library
}

var procs procPolicy

// apply records a communicator's cores per rank and sets GOMAXPROCS.
func (p *procPolicy) apply(cores int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cores == 0 || cores < p.cores {
		p.cores = cores
	}
	p.setLocked()
}

// threadEntered counts a C thread's first call; under the automatic policy
// GOMAXPROCS follows.
func (p *procPolicy) threadEntered() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.threads++
	if p.cores > 0 {
		p.setLocked()
	}
}

func (p *procPolicy) setLocked() {
	n := wantMaxProcs(p.cores, p.threads)
	if n != runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n) // stops the world briefly: only when the inputs change
	}
}

// wantMaxProcs is the automatic value for cores per rank and calling threads.
func wantMaxProcs(cores, threads int) int {
	return min(maxAutoMaxProcs, max(minAutoMaxProcs, cores, threads+1))
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
