package arena

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPlaceWords(t *testing.T) {
	_, _, ok := unpackPlace(0)
	require.False(t, ok, "an unwritten word is no place")
	for _, tc := range []struct {
		cpu int
		e   uint64
	}{{0, 1}, {1, 7}, {511, 1 << 40}, {3, 1<<48 + 5}} {
		cpu, e, ok := unpackPlace(packPlace(tc.cpu, tc.e))
		require.True(t, ok)
		require.Equal(t, tc.cpu, cpu)
		require.Equal(t, tc.e&placeEpochMask, e)
	}
	require.True(t, recent(9, 10), "the epoch before is recent")
	require.True(t, recent(10, 10))
	require.False(t, recent(8, 10), "two epochs back is stale")
}

// fakeSystem replaces the thread's CPU and the move for one test.
type fakeSystem struct {
	cpu   int
	moves []int // CPUs moved to
	cpus  int   // CPUs allowed
}

func (f *fakeSystem) install(t *testing.T) {
	oldCPU, oldMove := currentCPU, moveThread
	t.Cleanup(func() { currentCPU, moveThread = oldCPU, oldMove })
	currentCPU = func() (int, bool) { return f.cpu, true }
	moveThread = func(avoid func(int) bool, ranks int) bool {
		if f.cpus < ranks {
			return false
		}
		for c := range f.cpus {
			if !avoid(c) {
				f.moves = append(f.moves, c)
				f.cpu = c
				return true
			}
		}
		return false
	}
}

func TestColocatedHigherRankMovesAway(t *testing.T) {
	for _, tc := range []struct {
		name      string
		me, peer  int // local indexes
		peerCPU   int
		peerEpoch func(e uint64) uint64
		waits     int
		cpus      int
		wantMoves []int
	}{
		{"co-located, higher index moves", 1, 0, 0, func(e uint64) uint64 { return e }, colocatedLimit, 2, []int{1}},
		{"fewer waits than the limit", 1, 0, 0, func(e uint64) uint64 { return e }, colocatedLimit - 1, 2, nil},
		{"the lower index stays", 0, 1, 0, func(e uint64) uint64 { return e }, 3 * colocatedLimit, 2, nil},
		{"peer on another CPU", 1, 0, 1, func(e uint64) uint64 { return e }, 3 * colocatedLimit, 2, nil},
		{"stale peer place", 1, 0, 0, func(e uint64) uint64 { return e - 2 }, 3 * colocatedLimit, 2, nil},
		{"stale places do not break a run", 1, 0, 0, func(e uint64) uint64 { return e - 2*(e%2) }, 2 * colocatedLimit, 2, []int{1}},
		{"more ranks than CPUs", 1, 0, 0, func(e uint64) uint64 { return e }, 3 * colocatedLimit, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := connectAll(t, 2, testConfig(t.TempDir()))[tc.me]
			f := &fakeSystem{cpu: 0, cpus: tc.cpus}
			f.install(t)
			for e := uint64(10); e < uint64(10+tc.waits); e++ {
				a.places[tc.peer].Store(packPlace(tc.peerCPU, tc.peerEpoch(e)))
				a.notePlace(tc.peer, e)
			}
			require.Equal(t, tc.wantMoves, f.moves)
			require.Equal(t, int64(len(tc.wantMoves)), a.Moves())
		})
	}
}

func TestMovesAreRateLimited(t *testing.T) {
	a := connectAll(t, 2, testConfig(t.TempDir()))[1]
	f := &fakeSystem{cpus: 2}
	f.install(t)
	colocate := func(from uint64) {
		for e := from; e < from+colocatedLimit; e++ {
			a.places[0].Store(packPlace(f.cpu, e)) // the peer follows us
			a.notePlace(0, e)
		}
	}
	colocate(10)
	colocate(100)
	require.Len(t, f.moves, 1, "a second move within moveInterval")
	time.Sleep(moveInterval + 5*time.Millisecond) // wait out the rate limit
	colocate(200)
	require.Len(t, f.moves, 2)
}

func TestMoveAvoidsCPUsOfOtherRanks(t *testing.T) {
	arenas := connectAll(t, 3, testConfig(t.TempDir()))
	a := arenas[2]
	f := &fakeSystem{cpu: 0, cpus: 3}
	f.install(t)
	for e := uint64(10); e < 10+colocatedLimit; e++ {
		a.places[0].Store(packPlace(0, e))
		a.places[1].Store(packPlace(1, e)) // rank 1 holds CPU 1
		a.notePlace(0, e)
	}
	require.Equal(t, []int{2}, f.moves)
}

// TestColocatedRanksEndApart puts two ranks' threads on one CPU and runs
// collective steps: they must end on different CPUs.
func TestColocatedRanksEndApart(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs to separate two ranks")
	}
	arenas := connectAll(t, 2, testConfig(t.TempDir()))
	start := make(chan struct{})
	cpus := make([]int, 2)
	errs := make(chan error, 2)
	for r, a := range arenas {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			pinned := pinToFirstCPU(t)
			<-start
			unpin(t, pinned) // free to move, but both start on one CPU
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var err error
			for range 20000 {
				if err = stepOnce(ctx, a); err != nil {
					break
				}
			}
			cpus[r], _ = threadCPU()
			errs <- err
		}()
	}
	close(start)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.NotEqual(t, cpus[0], cpus[1], "two ranks still share CPU %d (moves: %d, %d)", cpus[0], arenas[0].Moves(), arenas[1].Moves())
}

// stepOnce is one epoch of a collective: post, then wait for the peers.
func stepOnce(ctx context.Context, a *Arena) error {
	if err := a.Begin(0); err != nil {
		return err
	}
	e := a.Next()
	a.Post(e)
	err := a.WaitAll(ctx, e)
	a.End(err)
	return err
}

func TestWokenOntoTheWakersCPUMovesBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		slept, now int // the sleeper's CPU before and after the wake-up
		wakerCPU   int
		wakerEpoch func(e uint64) uint64
		cpus       int
		wantMoves  []int
	}{
		{"woken onto the waker's CPU", 1, 0, 0, func(e uint64) uint64 { return e }, 2, []int{1}},
		{"woken where it slept", 1, 1, 0, func(e uint64) uint64 { return e }, 2, nil},
		{"moved, but not to the waker", 2, 1, 0, func(e uint64) uint64 { return e }, 3, nil},
		{"the waker's note is stale", 1, 0, 0, func(e uint64) uint64 { return e - 2 }, 2, nil},
		{"more ranks than CPUs", 1, 0, 0, func(e uint64) uint64 { return e }, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := connectAll(t, 2, testConfig(t.TempDir()))[0]
			f := &fakeSystem{cpu: tc.now, cpus: tc.cpus}
			f.install(t)
			const e = 10
			a.places[a.index].Store(packPlace(tc.slept, e)) // noted before the sleep
			a.places[1].Store(packPlace(tc.wakerCPU, tc.wakerEpoch(e)))
			a.noteWake(1, e, tc.slept)
			require.Equal(t, tc.wantMoves, f.moves)
			require.Equal(t, int64(len(tc.wantMoves)), a.Moves())
		})
	}
}

// TestPostNotesTheWakersCPU: a Post that wakes sleepers writes its CPU and
// epoch into the own place word first; one that wakes nobody leaves it.
func TestPostNotesTheWakersCPU(t *testing.T) {
	arenas := connectAll(t, 2, testConfig(t.TempDir()))
	a := arenas[0]
	f := &fakeSystem{cpu: 1, cpus: 2}
	f.install(t)
	require.NoError(t, a.Begin(0))
	e := a.Next()
	a.Post(e)
	_, _, ok := unpackPlace(a.places[a.index].Load())
	require.False(t, ok, "a Post with no sleeper notes nothing")
	a.End(nil)

	require.NoError(t, a.Begin(0))
	e = a.Next()
	a.waiters[a.index].Add(1) // a sleeper on the own bell
	a.Post(e)
	a.waiters[a.index].Add(^uint32(0))
	cpu, pe, ok := unpackPlace(a.places[a.index].Load())
	require.True(t, ok)
	require.Equal(t, 1, cpu)
	require.Equal(t, e, pe)
	a.End(nil)
}
