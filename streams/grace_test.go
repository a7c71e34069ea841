package streams

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A scheduler whose callers waited on their last syncStreak ops, with a
// grace so long that only a start without grace lets the tests finish (and
// that waiters always claim their ops in time, however slow the machine).
func syncScheduler(t *testing.T) (*Scheduler, *Stream) {
	t.Helper()
	sch := NewScheduler("t", Config{InlineGrace: time.Hour, SyncGrace: time.Hour})
	st := sch.NewStream("s", 0, 0)
	for i := range syncStreak {
		w := st.Submit("sync", func() error { return nil })
		require.True(t, w.RunInline(), "op %d: its waiter runs it", i)
		require.NoError(t, w.Wait(context.Background(), waitLimit))
	}
	require.Equal(t, time.Hour, sch.grace(), "a synchronous caller gets the long grace")
	return sch, st
}

func TestGraceAdaptsToTheCaller(t *testing.T) {
	sch := NewScheduler("t", Config{SyncGrace: time.Hour})
	defer sch.Close()
	st := sch.NewStream("s", 0, 0)
	assert.Equal(t, inlineGrace, sch.grace(), "no history: the short grace")

	// Ops nobody waits for start after the short grace.
	w := st.Submit("async", func() error { return nil })
	require.Eventually(t, func() bool { done, _ := w.Test(); return done }, waitLimit, time.Millisecond)
	assert.Equal(t, inlineGrace, sch.grace())

	sch2, _ := syncScheduler(t) // asserts the long grace after a streak
	sch2.Close()
}

func TestWaiterDoesNotWaitOutTheGrace(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, st *Stream)
	}{
		{"wait on the granted op itself", func(t *testing.T, st *Stream) {
			w := st.Submit("a", func() error { return nil })
			require.NoError(t, w.Wait(context.Background(), waitLimit))
		}},
		{"wait on an op queued behind an unclaimed one", func(t *testing.T, st *Stream) {
			a := st.Submit("a", func() error { return nil })
			b := st.Submit("b", func() error { return nil })
			c := st.Submit("c", func() error { return nil })
			require.NoError(t, c.Wait(context.Background(), waitLimit))
			done, err := a.Test()
			assert.True(t, done)
			assert.NoError(t, err)
			require.NoError(t, b.Wait(context.Background(), waitLimit))
		}},
		{"an op granted while a waiter is blocked", func(t *testing.T, st *Stream) {
			release := make(chan struct{})
			hold := st.Submit("hold", func() error { <-release; return nil })
			next := st.Submit("next", func() error { return nil })
			waited := make(chan error, 1)
			go func() { waited <- next.Wait(context.Background(), waitLimit) }()
			require.Eventually(t, func() bool { return st.sched.waiters.Load() == 1 }, waitLimit, time.Millisecond)
			close(release) // hold ends, next is granted with a waiter blocked
			select {
			case err := <-waited:
				require.NoError(t, err)
			case <-time.After(waitLimit):
				t.Fatal("the granted op waited for its grace (an hour)")
			}
			require.NoError(t, hold.Wait(context.Background(), waitLimit))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sch, st := syncScheduler(t)
			defer sch.Close()
			c.run(t, st)
		})
	}
}

func TestLateStartEndsTheStreak(t *testing.T) {
	sch := NewScheduler("t", Config{InlineGrace: time.Hour, SyncGrace: 5 * time.Millisecond})
	defer sch.Close()
	st := sch.NewStream("s", 0, 0)
	for range syncStreak {
		w := st.Submit("sync", func() error { return nil })
		require.True(t, w.RunInline())
	}
	require.Equal(t, 5*time.Millisecond, sch.grace())
	w := st.Submit("async", func() error { return nil }) // nobody waits: a worker starts it
	require.Eventually(t, func() bool { done, _ := w.Test(); return done }, waitLimit, time.Millisecond)
	assert.Equal(t, time.Hour, sch.grace(), "back to the first grace")
}

func TestStartSkipsTheGrace(t *testing.T) {
	for _, early := range []bool{true, false} {
		t.Run(map[bool]string{true: "before it is granted", false: "after it is granted"}[early], func(t *testing.T) {
			sch, st := syncScheduler(t) // an hour of grace
			defer sch.Close()
			release := make(chan struct{})
			hold := st.Submit("hold", func() error { <-release; return nil })
			hold.Start() // on a worker: it blocks until released
			w := st.Submit("w", func() error { return nil })
			if early {
				w.Start()
				close(release)
			} else {
				close(release)
				require.Eventually(t, func() bool { done, _ := hold.Test(); return done }, waitLimit, time.Millisecond)
				w.Start()
			}
			require.Eventually(t, func() bool { done, _ := w.Test(); return done }, waitLimit, time.Millisecond,
				"a started op must not wait for its grace (an hour)")
			w.Start() // harmless once done
		})
	}
}

// Completions of one stream stay in order even when every op starts at
// once on a worker (eager, or with a waiter blocked on the last one).
func TestEagerCompletionsInStreamOrder(t *testing.T) {
	for _, mode := range []string{"eager", "blocked waiter"} {
		t.Run(mode, func(t *testing.T) {
			sch := NewScheduler("t", Config{})
			defer sch.Close()
			st := sch.NewStream("s", 0, 0)
			const n = 300
			var mu sync.Mutex
			var order []int
			works := make([]*Work, n)
			for i := range n {
				works[i] = st.Submit("op", func() error { return nil })
				works[i].OnComplete(func(error) {
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
				})
				if mode == "eager" {
					works[i].Start()
				}
			}
			require.NoError(t, works[n-1].Wait(context.Background(), waitLimit))
			// Wait returns before the last callback has run.
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == n }, waitLimit, time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			for i, got := range order {
				require.Equal(t, i, got, "completion %d", i)
			}
		})
	}
}

// timedOp is an Op that claims to have run for d (it sets its own end),
// so that tests control the run time the grace timer's guess follows.
type timedOp struct {
	d   time.Duration
	ran atomic.Bool
}

func (o *timedOp) Run(stamps *Stamps) error {
	o.ran.Store(true)
	if o.d > 0 {
		stamps.Ended = stamps.Started.Add(o.d)
	}
	return nil
}

func (o *timedOp) Desc() string { return "timed" }

// graceState returns whether the grace timer is armed and how often it
// was.
func graceState(sch *Scheduler) (armed bool, arms int) {
	sch.mu.Lock()
	defer sch.mu.Unlock()
	return !sch.graceAt.IsZero(), sch.graceArms
}

func TestClaimKeepsOrStopsTheGraceTimer(t *testing.T) {
	cases := []struct {
		name      string
		lastRun   time.Duration // how long the op before ran
		other     bool          // another granted op still waits for its grace
		wantArmed bool
	}{
		{"a short op leaves it armed", time.Microsecond, false, true},
		{"an op likely to outlast it stops it", 2 * time.Hour, false, false},
		{"another op still waits for it", 2 * time.Hour, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sch := NewScheduler("t", Config{InlineGrace: time.Hour, SyncGrace: time.Hour})
			defer sch.Close()
			a, b := sch.NewStream("a", 0, 0), sch.NewStream("b", 0, 0)
			var other *Work
			if tc.other {
				other = b.Submit("other", func() error { return nil })
			}
			w := a.Submit("w", func() error { return nil })
			armed, _ := graceState(sch)
			require.True(t, armed, "a granted op arms the timer")
			sch.lastRun.Store(int64(tc.lastRun))
			require.True(t, w.RunInline())
			armed, _ = graceState(sch)
			assert.Equal(t, tc.wantArmed, armed)
			if other != nil {
				require.NoError(t, other.Wait(context.Background(), waitLimit))
			}
		})
	}
}

func TestSyncLoopArmsTheGraceTimerRarely(t *testing.T) {
	const n = 200
	cases := []struct {
		name     string
		run      time.Duration // how long each op claims to run
		wantArms int
	}{
		// Armed by the first op, then left armed: it would fire after
		// each op is over.
		{"small ops", 0, 1},
		// Each claim stops it (it would fire mid-op) and the next grant
		// arms it again; the first op ran before any guess was made.
		{"ops longer than the grace", 2 * time.Hour, n - 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sch := NewScheduler("t", Config{InlineGrace: time.Hour, SyncGrace: time.Hour})
			defer sch.Close()
			st := sch.NewStream("s", 0, 0)
			for i := range n {
				r, err := st.Reserve(context.Background())
				require.NoError(t, err)
				op := &timedOp{d: tc.run}
				w := r.SubmitOp(op, time.Time{})
				require.True(t, w.RunInline(), "op %d", i)
				require.NoError(t, w.Wait(context.Background(), waitLimit))
				require.True(t, op.ran.Load())
			}
			_, arms := graceState(sch)
			assert.Equal(t, tc.wantArms, arms)
		})
	}
}

// An op nobody waits on starts once its grace has passed, not before,
// when the timer was left armed by an earlier op (for an earlier time).
func TestUnclaimedOpStartsAfterItsGrace(t *testing.T) {
	const grace = 30 * time.Millisecond
	sch := NewScheduler("t", Config{InlineGrace: grace, SyncGrace: grace})
	defer sch.Close()
	st := sch.NewStream("s", 0, 0)
	w := st.Submit("sync", func() error { return nil })
	require.True(t, w.RunInline())
	armed, _ := graceState(sch)
	require.True(t, armed, "left armed by the claimed op")
	// The next op comes a third of a grace later: the armed timer fires
	// before that op's grace is over.
	time.Sleep(grace / 3)
	before := time.Now()
	late := st.Submit("unclaimed", func() error { return nil })
	require.NoError(t, waitDone(late))
	started, _ := late.Times()
	assert.GreaterOrEqual(t, started.Sub(before), grace, "started before its grace was over")
}

// waitDone waits for w without Wait, which would start it at once.
func waitDone(w *Work) error {
	select {
	case <-w.Done():
		return w.Err()
	case <-time.After(waitLimit):
		return ErrTimeout
	}
}
