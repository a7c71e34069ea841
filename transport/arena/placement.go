package arena

import (
	"sync/atomic"
	"time"
)

// Placement: keeping the ranks of a host off each other's CPU.
//
// Ranks that wait for each other need a CPU each: on one CPU every step
// becomes a hand-over through the scheduler and each rank gets half the
// CPU. Linux sometimes puts two ranks on one CPU (a futex wake-up places
// the woken rank on the waker's CPU when the other CPUs look busy for an
// instant) and then leaves them there for seconds, or for a whole job:
// both are always runnable, they take turns through sched_yield, and the
// load balancer finds the waiting one cache-hot whenever it looks. On a
// 2-CPU VM that was the slow mode of 1 job in 3 to 1 in 5: every
// all_reduce 2-4x slower from start to end, the two ranks' threads on the
// same CPU in every sample.
//
// So a wait that stops spinning notes its CPU and epoch in the own
// segment's place word and reads the peer's. After colocatedLimit such
// waits found the peer waiting on the same CPU just now (at this epoch or
// the one before), with none in between finding it on another CPU (a
// peer that has not waited lately tells nothing), the rank with the
// higher local index moves its
// thread: it narrows the thread's affinity to an allowed CPU that no local
// rank was seen on just now, which migrates it at once, and restores the
// affinity it had. It does nothing when the local ranks outnumber the
// allowed CPUs (sharing is then unavoidable), and moves at most once per
// moveInterval.
//
// A wait that slept is the other way in: the futex wake-up that ends it
// may move the sleeper onto the waker's CPU (the kernel prefers the
// waker's warm cache when the sleeper's CPU has gone idle). So a rank that
// wakes a sleeping peer notes its CPU first (Post), and a rank woken onto
// the CPU its waker noted moves off it at once (noteWake): one wake-up
// would otherwise leave both ranks on one CPU for the rest of the op.

// The system side, replaceable in tests: the calling thread's CPU, and
// the move (see moveOff).
var (
	currentCPU = threadCPU
	moveThread = moveOff
)

const (
	colocatedLimit = 4
	moveInterval   = 5 * time.Millisecond
)

// placement is an arena's record of its waits' placement.
type placement struct {
	colocated atomic.Int32 // waits in a row that found the peer on this CPU
	lastMove  atomic.Int64 // placementClock reading of the last move
	moves     atomic.Int64 // moves made
}

// placementClock starts at package load; its readings are monotonic.
var placementStart = time.Now()

func placementClock() int64 { return int64(time.Since(placementStart)) }

// A place word holds CPU+1 in its top 16 bits and the low 48 bits of the
// epoch waited for; 0 means never written.
const placeEpochMask = 1<<48 - 1

func packPlace(cpu int, e uint64) uint64 { return uint64(cpu+1)<<48 | e&placeEpochMask }

func unpackPlace(v uint64) (cpu int, e uint64, ok bool) {
	if v == 0 {
		return 0, 0, false
	}
	return int(v>>48) - 1, v & placeEpochMask, true
}

// recent reports whether a place word written at epoch pe is current for a
// wait at epoch e.
func recent(pe, e uint64) bool { return pe+1 >= e&placeEpochMask }

// notePlace runs when a wait for local rank j at epoch e stops spinning.
func (a *Arena) notePlace(j int, e uint64) {
	cpu, ok := a.noteCPU(e)
	if !ok {
		return
	}
	pc, pe, ok := unpackPlace(a.places[j].Load())
	switch {
	case !ok || !recent(pe, e):
		return // the peer has not waited lately: nothing known
	case pc != cpu:
		a.pl.colocated.Store(0)
		return
	}
	if a.pl.colocated.Add(1) < colocatedLimit || a.index < j {
		return // the peer with the higher index moves
	}
	if last := a.pl.lastMove.Load(); last != 0 && placementClock()-last < int64(moveInterval) {
		return
	}
	a.moveOff(cpu, e)
}

// NotePlace is notePlace for waits outside Go (Raw): the C fast lane's
// wait calls it when it stops spinning and finds local rank j waiting on
// its CPU at epoch e.
func (a *Arena) NotePlace(j int, e uint64) {
	if j >= 0 && j < len(a.places) && j != a.index {
		a.notePlace(j, e)
	}
}

// moveOff moves this rank's thread off CPU cpu to one where no local rank
// was seen at epoch e, and records the attempt (the rate limit's clock,
// the run of co-located waits) and the move.
func (a *Arena) moveOff(cpu int, e uint64) {
	a.pl.lastMove.Store(placementClock())
	a.pl.colocated.Store(0)
	if moveThread(func(c int) bool { return a.seenOn(c, cpu, e) }, len(a.ranks)) {
		a.pl.moves.Add(1)
	}
}

// noteCPU writes this rank's CPU and epoch e into its place word and
// returns the CPU.
func (a *Arena) noteCPU(e uint64) (int, bool) {
	cpu, ok := currentCPU()
	if ok {
		a.places[a.index].Store(packPlace(cpu, e))
	}
	return cpu, ok
}

// noteWake runs when a wait for local rank j at epoch e ends after it
// slept on CPU slept.
func (a *Arena) noteWake(j int, e uint64, slept int) {
	cpu, ok := currentCPU()
	if !ok || cpu == slept {
		return
	}
	pc, pe, ok := unpackPlace(a.places[j].Load())
	if !ok || pc != cpu || !recent(pe, e) {
		return // not woken onto the waker's CPU
	}
	a.places[a.index].Store(packPlace(cpu, e)) // where it runs now, not where it slept
	a.moveOff(cpu, e)
}

// seenOn reports whether CPU c is this rank's current one or one that a
// local rank waited on just now.
func (a *Arena) seenOn(c, mine int, e uint64) bool {
	if c == mine {
		return true
	}
	for _, w := range a.places {
		if pc, pe, ok := unpackPlace(w.Load()); ok && pc == c && recent(pe, e) {
			return true
		}
	}
	return false
}

// Moves is how many times this rank moved its thread off a peer's CPU.
func (a *Arena) Moves() int64 { return a.pl.moves.Load() }
