package streams

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const waitLimit = 10 * time.Second

// recorder notes events ("start X", "end X") in the order they happen.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// op is an operation that records its start and end, and blocks until
// release is closed (nil: no wait).
func (r *recorder) op(name string, release <-chan struct{}) func() error {
	return func() error {
		r.add("start " + name)
		if release != nil {
			<-release
		}
		r.add("end " + name)
		return nil
	}
}

func waitAll(t *testing.T, ws ...*Work) {
	t.Helper()
	for _, w := range ws {
		require.NoError(t, w.Wait(context.Background(), waitLimit), w.Desc())
	}
}

// waitRunning waits until sch runs n operations.
func waitRunning(t *testing.T, sch *Scheduler, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return sch.Running() == n }, waitLimit, time.Millisecond)
}

func TestOneStreamCompletesInOrder(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	s := sch.NewStream("s", 0, 8) // fewer slots than ops: back-pressure too
	var mu sync.Mutex
	var done []int
	var works []*Work
	for i := range 200 {
		sleep := time.Duration(rand.IntN(50)) * time.Microsecond // ops of varied length
		w := s.Submit("op", func() error { time.Sleep(sleep); return nil })
		w.OnComplete(func(error) { mu.Lock(); done = append(done, i); mu.Unlock() })
		works = append(works, w)
	}
	waitAll(t, works...)
	for i := 1; i < len(works); i++ {
		prevEnd := times(works[i-1]).finished
		start := times(works[i]).started
		require.False(t, start.Before(prevEnd), "op %d started before op %d completed", i, i-1)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range done {
		require.Equal(t, i, done[i], "completion order")
	}
}

type span struct{ started, finished time.Time }

func times(w *Work) span {
	s, f := w.Times()
	return span{s, f}
}

func TestStreamsCompleteOutOfOrder(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	a, b := sch.NewStream("a", 0, 0), sch.NewStream("b", 0, 0)
	var rec recorder
	release := make(chan struct{})
	slow := a.Submit("slow", rec.op("slow", release))
	slow.OnComplete(func(error) { rec.add("done slow") })
	fast := b.Submit("fast", rec.op("fast", nil))
	fast.OnComplete(func(error) { rec.add("done fast") })
	waitAll(t, fast)
	close(release)
	waitAll(t, slow)
	ev := rec.get()
	assert.Less(t, index(ev, "done fast"), index(ev, "done slow"), "events: %v", ev)
}

func index(events []string, e string) int {
	for i, x := range events {
		if x == e {
			return i
		}
	}
	return -1
}

func TestHighPriorityOpStartsFirst(t *testing.T) {
	// One worker: while it is busy, a long low-priority op and then a
	// high-priority op are queued; the high one starts first.
	sch := NewScheduler("t", Config{Workers: 1, DeferLimit: time.Minute})
	defer sch.Close()
	busy := sch.NewStream("busy", 0, 0)
	low := sch.NewStream("low", 0, 0)
	high := sch.NewStream("high", 10, 0)
	var rec recorder
	releaseBusy, releaseLow := make(chan struct{}), make(chan struct{})
	b := busy.Submit("busy", rec.op("busy", releaseBusy))
	waitRunning(t, sch, 1)
	l := low.Submit("long low", rec.op("low", releaseLow))
	h := high.Submit("high", rec.op("high", nil))
	close(releaseBusy)
	waitAll(t, b, h)
	close(releaseLow)
	waitAll(t, l)
	assert.Equal(t, []string{"start busy", "end busy", "start high", "end high", "start low", "end low"}, rec.get())
}

func TestHighPriorityRunsBesideLongLowOp(t *testing.T) {
	// The default budget (one worker per stream): a high-priority op
	// submitted behind a running long low-priority op starts and completes
	// while the low one still runs.
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	low, high := sch.NewStream("low", 0, 0), sch.NewStream("high", 1, 0)
	var rec recorder
	release := make(chan struct{})
	l := low.Submit("long low", rec.op("low", release))
	require.Eventually(t, func() bool { return index(rec.get(), "start low") == 0 }, waitLimit, time.Millisecond)
	h := high.Submit("high", rec.op("high", nil))
	waitAll(t, h)
	close(release)
	waitAll(t, l)
	assert.Equal(t, []string{"start low", "start high", "end high", "end low"}, rec.get())
}

func TestBudgetBoundsConcurrency(t *testing.T) {
	sch := NewScheduler("t", Config{Workers: 2, DeferLimit: time.Minute})
	defer sch.Close()
	var now, peak atomic.Int32
	var works []*Work
	for i := range 4 {
		s := sch.NewStream("s", i%2, 0)
		for range 20 {
			works = append(works, s.Submit("op", func() error {
				n := now.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(100 * time.Microsecond) // the op's work: ops can overlap
				now.Add(-1)
				return nil
			}))
		}
	}
	waitAll(t, works...)
	assert.LessOrEqual(t, peak.Load(), int32(2))
	assert.Equal(t, int32(2), peak.Load(), "two streams' ops should have overlapped")
}

func TestDeferLimitStartsAWaitingOp(t *testing.T) {
	// The budget is held by an op that never ends on its own (as a
	// collective whose peers hold back the op it waits for): a ready op
	// still starts once it has waited DeferLimit.
	const limit = 30 * time.Millisecond
	sch := NewScheduler("t", Config{Workers: 1, DeferLimit: limit})
	defer sch.Close()
	a, b := sch.NewStream("a", 0, 0), sch.NewStream("b", 0, 0)
	release := make(chan struct{})
	stuck := a.Submit("stuck", func() error { <-release; return nil })
	waitRunning(t, sch, 1)
	submitted := time.Now()
	next := b.Submit("next", func() error { return nil })
	waitAll(t, next)
	waited := times(next).started.Sub(submitted)
	assert.GreaterOrEqual(t, waited, limit)
	assert.Less(t, waited, 5*time.Second)
	close(release)
	waitAll(t, stuck)
}

func TestEventsOrderStreams(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	a, b := sch.NewStream("a", 0, 0), sch.NewStream("b", 1, 0)
	var rec recorder
	release := make(chan struct{})
	first := a.Submit("first", rec.op("first", release))
	ev := a.Record("after first")
	// Dependencies hold no worker: with no budget left but b's markers,
	// b's op still starts as soon as the event completes.
	dependent := b.Submit("dependent", rec.op("dependent", nil), ev)
	independent := a.Submit("independent", rec.op("independent", nil))
	require.Eventually(t, func() bool { return index(rec.get(), "start first") == 0 }, waitLimit, 100*time.Microsecond)
	assert.Never(t, func() bool { return len(rec.get()) > 1 }, 5*time.Millisecond, 100*time.Microsecond,
		"an op started while first held stream a and the event: %v", rec.get())
	close(release)
	waitAll(t, first, ev, dependent, independent)
	got := rec.get()
	assert.Less(t, index(got, "end first"), index(got, "start dependent"), "events: %v", got)
}

func TestAfterCarriesStatus(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	a, b := sch.NewStream("a", 0, 0), sch.NewStream("b", 0, 0)
	boom := errors.New("boom")
	failed := a.Submit("fails", func() error { return boom })
	marker := b.After(failed)
	later := b.Submit("later", func() error { return nil })
	require.ErrorIs(t, marker.Wait(context.Background(), waitLimit), boom)
	require.NoError(t, later.Wait(context.Background(), waitLimit), "the stream goes on after a failed event")
}

func TestReserveBackPressure(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	s := sch.NewStream("s", 0, 2)
	release := make(chan struct{})
	w1 := s.Submit("1", func() error { <-release; return nil })
	w2 := s.Submit("2", func() error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := s.Reserve(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a full stream makes the submitter wait")

	submitted := make(chan *Work)
	go func() { submitted <- s.Submit("3", func() error { return nil }) }()
	select {
	case <-submitted:
		t.Fatal("Submit returned while the stream was full")
	case <-time.After(10 * time.Millisecond):
	}
	close(release)
	w3 := <-submitted
	waitAll(t, w1, w2, w3)

	r, err := s.Reserve(context.Background())
	require.NoError(t, err)
	r.Cancel()
	r.Cancel() // idempotent
	assert.ErrorContains(t, r.Submit("used", func() error { return nil }).Wait(context.Background(), waitLimit), "already used")
}

func TestRunInlineRespectsBudget(t *testing.T) {
	sch := NewScheduler("t", Config{Workers: 1, DeferLimit: time.Minute})
	defer sch.Close()
	a, b := sch.NewStream("a", 0, 0), sch.NewStream("b", 0, 0)
	release := make(chan struct{})
	hold := a.Submit("hold", func() error { <-release; return nil })
	waitRunning(t, sch, 1)
	w := b.Submit("w", func() error { return nil })
	assert.False(t, w.RunInline(), "no free worker: the waiter must not run it")
	close(release)
	waitAll(t, hold, w)
}

func TestCloseDrainsAndRefuses(t *testing.T) {
	sch := NewScheduler("t", Config{Workers: 1})
	a, b := sch.NewStream("a", 0, 0), sch.NewStream("b", 5, 0)
	var n atomic.Int32
	var works []*Work
	for range 50 {
		works = append(works, a.Submit("a", func() error { n.Add(1); return nil }))
		works = append(works, b.Submit("b", func() error { n.Add(1); return nil }))
	}
	sch.Close()
	assert.Equal(t, int32(100), n.Load(), "Close lets queued work run")
	for _, w := range works {
		done, err := w.Test()
		assert.True(t, done)
		assert.NoError(t, err)
	}
	require.ErrorIs(t, a.Submit("late", func() error { return nil }).Wait(context.Background(), waitLimit), ErrStreamClosed)
	sch.Close() // idempotent
}

func TestSchedulerStress(t *testing.T) {
	// Random ops on several streams of a budgeted scheduler, with random
	// cross-stream dependencies and inline waiters: every op runs once,
	// each stream in order, every dependency before its dependent.
	n := 20000
	if testing.Short() {
		n = 2000
	}
	sch := NewScheduler("t", Config{Workers: 2, DeferLimit: time.Millisecond, Depth: 16})
	defer sch.Close()
	const numStreams = 4
	var ss []*Stream
	for i := range numStreams {
		ss = append(ss, sch.NewStream("s", i%3, 0))
	}
	type rec struct {
		stream, index int
		ran           atomic.Int32
		w             *Work
		deps          []*rec
	}
	var all []*rec
	var last [numStreams][]*rec
	rng := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	var bad atomic.Int32
	for range n {
		si := rng.IntN(numStreams)
		r := &rec{stream: si, index: len(last[si])}
		var deps []*Work
		if rng.IntN(8) == 0 && len(all) > 0 {
			d := all[rng.IntN(len(all))]
			r.deps = append(r.deps, d)
			deps = append(deps, d.w)
		}
		prev := last[si]
		r.w = ss[si].Submit("op", func() error {
			r.ran.Add(1)
			if r.index > 0 && prev[r.index-1].ran.Load() == 0 {
				bad.Add(1) // ran before its predecessor
			}
			for _, d := range r.deps {
				if done, _ := d.w.Test(); !done {
					bad.Add(1)
				}
			}
			return nil
		}, deps...)
		last[si] = append(last[si], r)
		all = append(all, r)
		if rng.IntN(16) == 0 {
			wg.Add(1)
			go func() { defer wg.Done(); r.w.RunInline() }()
		}
	}
	wg.Wait()
	for _, r := range all {
		require.NoError(t, r.w.Wait(context.Background(), waitLimit))
		require.Equal(t, int32(1), r.ran.Load())
	}
	require.Zero(t, bad.Load())
}
