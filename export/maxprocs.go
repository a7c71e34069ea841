package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
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
// automatic value keeps one P more than the calling threads alive, even
// above the host's core count. An idle P costs little, but not nothing: the
// garbage collector runs a quarter of GOMAXPROCS as workers during a cycle.
// So the value follows the threads both ways. hccl_go.c counts a C thread
// from its first call until it exits. A thread's first call raises
// GOMAXPROCS at once. The first call into the library after threads have
// exited (or a communicator's init) starts a shrink window of shrinkAfter,
// at whose end GOMAXPROCS comes down to what the most threads alive at once
// during the window need; another window follows while fewer are alive.
// Threads that come and go every step (the sparse ops' waiters) so keep it
// steady: each change stops the world.
//
// The policy (process-wide, like GOMAXPROCS):
//   - HCCL_GO_MAXPROCS=n (n > 0): GOMAXPROCS is n (set when the library
//     loads and at each communicator's init);
//   - HCCL_GO_MAXPROCS=0: the Go runtime's own default is left alone;
//   - unset, empty or "auto": from the first communicator's init on, the
//     larger of the cores left to each rank on this host (NumCPU / local
//     ranks, the lowest over the communicators so far: a subgroup with
//     fewer local ranks keeps it) and the calling threads alive + 1 (as
//     above), at least 2 and at most maxAutoMaxProcs.
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

// shrinkAfter is the shrink window: how long GOMAXPROCS keeps room for
// calling threads that have exited.
const shrinkAfter = time.Second

// procPolicy is the automatic policy's state. It is process-wide because
// GOMAXPROCS is: every communicator of the process shares it.
type procPolicy struct {
	mu        sync.Mutex
	cores     int  // the lowest cores-per-rank a communicator asked for (0: no communicator yet)
	sized     int  // the calling threads GOMAXPROCS is sized for
	peak      int  // the most calling threads alive at once in the shrink window
	shrinking bool // a shrink window is running

	live       func() int                  // calling threads alive (liveThreads)
	gomaxprocs func(int) int               // runtime.GOMAXPROCS
	after      func(time.Duration, func()) // runs f once d has passed
}

var procs = procPolicy{
	live:       liveThreads,
	gomaxprocs: runtime.GOMAXPROCS,
	after:      func(d time.Duration, f func()) { time.AfterFunc(d, f) },
}

// apply records a communicator's cores per rank and sets GOMAXPROCS.
func (p *procPolicy) apply(cores int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cores == 0 || cores < p.cores {
		p.cores = cores
	}
	live := p.live()
	p.sawLocked(live)
	p.setLocked()
	p.watchLocked(live) // threads may have exited before the first communicator
}

// threadEntered follows a C thread's first call: under the automatic policy
// GOMAXPROCS grows at once.
func (p *procPolicy) threadEntered() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sawLocked(p.live())
	if p.cores > 0 {
		p.setLocked()
	}
}

// threadsExited follows the exit of counted threads: a shrink window starts.
func (p *procPolicy) threadsExited() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watchLocked(p.live())
}

// sawLocked records live calling threads alive.
func (p *procPolicy) sawLocked(live int) {
	p.sized = max(p.sized, live)
	p.peak = max(p.peak, live)
}

// watchLocked starts a shrink window when fewer threads are alive than
// GOMAXPROCS is sized for, unless one is running.
func (p *procPolicy) watchLocked(live int) {
	if p.shrinking || p.cores == 0 || live >= p.sized {
		return
	}
	p.shrinking = true
	p.peak = live
	p.after(shrinkAfter, p.endWindow)
}

// endWindow sizes GOMAXPROCS for the most threads alive at once during the
// window; if fewer are alive now, the next window starts.
func (p *procPolicy) endWindow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shrinking = false
	p.sized = p.peak
	p.setLocked()
	p.watchLocked(p.live())
}

func (p *procPolicy) setLocked() {
	n := wantMaxProcs(p.cores, p.sized)
	if n != p.gomaxprocs(0) {
		p.gomaxprocs(n) // stops the world briefly: only when the inputs change
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
