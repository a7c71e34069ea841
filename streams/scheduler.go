package streams

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultDepth bounds the operations queued (and running) on one stream.
const DefaultDepth = 1024

// DefaultDeferLimit is how long a ready operation waits for a worker
// before it starts above the budget (see the package doc).
const DefaultDeferLimit = 5 * time.Millisecond

// Config sets up a Scheduler.
type Config struct {
	// Workers bounds the operations that run at once (0: no bound; each
	// stream still runs one at a time).
	Workers int
	// DeferLimit is how long a ready operation may wait for a worker
	// before it starts anyway (0: DefaultDeferLimit).
	DeferLimit time.Duration
	// Depth is the default depth of the scheduler's streams (0:
	// DefaultDepth).
	Depth int
	// InlineGrace and SyncGrace are how long a granted op waits for its
	// waiter to claim it, before and after the caller showed that it waits
	// on everything it issues (0: inlineGrace, syncGrace; Scheduler.grace).
	InlineGrace, SyncGrace time.Duration
}

// Scheduler grants workers to the ready operations of its streams: by
// priority, within a budget, with a deferral limit (see the package doc).
type Scheduler struct {
	name string
	cfg  Config

	mu       sync.Mutex
	streams  []*Stream
	running  int    // granted operations not finished, dependency-only ones excluded
	nextSeq  uint64 // submission order across streams (ties of equal priority)
	timer    *time.Timer
	timerAt  time.Time // when timer fires; zero or past: not armed
	stopping bool
	// graceTimer starts the workers of granted ops whose grace ran out
	// unclaimed (grace.go); graceAt is when it fires, zero: not armed.
	graceTimer *time.Timer
	graceAt    time.Time

	// inlineStreak counts the latest operations that waiters claimed
	// before their grace ran out (reset when a worker had to start one):
	// a long streak means the caller waits on everything it issues.
	inlineStreak atomic.Int32
	// waiters counts goroutines blocked in Work.Wait on this scheduler's
	// operations: while there are any, granted ops start without grace.
	waiters atomic.Int32
}

// NewScheduler returns a scheduler without streams.
func NewScheduler(name string, cfg Config) *Scheduler {
	if cfg.DeferLimit <= 0 {
		cfg.DeferLimit = DefaultDeferLimit
	}
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultDepth
	}
	if cfg.Workers < 0 {
		cfg.Workers = 0
	}
	if cfg.InlineGrace <= 0 {
		cfg.InlineGrace = inlineGrace
	}
	if cfg.SyncGrace <= 0 {
		cfg.SyncGrace = syncGrace
	}
	return &Scheduler{name: name, cfg: cfg}
}

// Config returns the scheduler's settings, defaults filled in.
func (s *Scheduler) Config() Config { return s.cfg }

// NewStream adds a stream; higher priority values are granted workers
// first. depth <= 0 takes the scheduler's default depth.
func (s *Scheduler) NewStream(name string, priority, depth int) *Stream {
	if depth <= 0 {
		depth = s.cfg.Depth
	}
	st := &Stream{
		sched: s, name: name, priority: priority,
		slots: make(chan struct{}, depth), drained: make(chan struct{}),
	}
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.mu.Unlock()
	return st
}

// Close closes every stream (queued work still runs) and waits for them to
// drain.
func (s *Scheduler) Close() {
	s.mu.Lock()
	all := slices.Clone(s.streams)
	s.mu.Unlock()
	for _, st := range all {
		st.Close()
	}
	s.mu.Lock()
	s.stopping = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.graceTimer != nil {
		s.graceTimer.Stop()
	}
	s.mu.Unlock()
}

// Running is the number of operations running now (dependency-only ones
// excluded), for tests and diagnostics.
func (s *Scheduler) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// kick re-runs dispatch: after a dependency completed, a deferral expired,
// or an operation was queued.
func (s *Scheduler) kick() {
	var room [grantRoom]*task
	s.mu.Lock()
	grants, watch := s.dispatchLocked(time.Now(), room[:0])
	s.mu.Unlock()
	s.launch(grants, watch)
}

// dispatchLocked grants workers to ready operations by the rules of the
// package doc. It appends the granted operations to grants (room the
// caller provides, so that a dispatch allocates nothing in the common case),
// to start once s.mu is released, and returns the dependencies to watch
// (their completion kicks s).
func (s *Scheduler) dispatchLocked(now time.Time, grants []*task) (_ []*task, watch []*Work) {
	var room [grantRoom]*task
	ready := room[:0]
	for _, st := range s.streams {
		if st.running != nil || len(st.queue) == 0 {
			continue
		}
		t := st.queue[0]
		if dep := t.pendingDep(); dep != nil {
			if t.watching != dep {
				t.watching = dep
				watch = append(watch, dep)
			}
			continue
		}
		if t.light {
			s.grantLocked(t) // no work of its own: never waits for a worker
			grants = append(grants, t)
			continue
		}
		if t.readySince.IsZero() {
			t.readySince = now
		}
		ready = append(ready, t)
	}
	slices.SortFunc(ready, func(a, b *task) int {
		if a.stream.priority != b.stream.priority {
			return b.stream.priority - a.stream.priority
		}
		return cmp.Compare(a.seq, b.seq)
	})
	var deadline time.Time
	for _, t := range ready {
		due := t.readySince.Add(s.cfg.DeferLimit)
		if s.hasWorkerLocked() || !now.Before(due) {
			s.grantLocked(t)
			grants = append(grants, t)
			continue
		}
		if deadline.IsZero() || due.Before(deadline) {
			deadline = due
		}
	}
	s.armTimerLocked(deadline, now)
	return grants, watch
}

// grantRoom is the grants a dispatch holds without allocating: one per
// stream of a communicator.
const grantRoom = 4

func (s *Scheduler) hasWorkerLocked() bool {
	return s.cfg.Workers == 0 || s.running < s.cfg.Workers
}

// grantLocked makes t, the head of its idle stream, the stream's running
// operation.
func (s *Scheduler) grantLocked(t *task) {
	st := t.stream
	// Shift rather than reslice: the queue keeps its capacity, so that
	// queuing the next op reuses it (queues are short).
	n := copy(st.queue, st.queue[1:])
	st.queue[n] = nil
	st.queue = st.queue[:n]
	st.running = t
	t.granted = true
	if !t.light {
		s.running++
	}
}

// armTimerLocked makes sure dispatch runs again by deadline (zero: no
// deferred operation). A timer that fires early or needlessly only causes
// a spare dispatch.
func (s *Scheduler) armTimerLocked(deadline, now time.Time) {
	if deadline.IsZero() || s.stopping {
		return
	}
	if !s.timerAt.IsZero() && s.timerAt.After(now) && !s.timerAt.After(deadline) {
		return // an armed timer fires in time
	}
	s.timerAt = deadline
	if s.timer == nil {
		s.timer = time.AfterFunc(deadline.Sub(now), s.kick)
		return
	}
	s.timer.Reset(deadline.Sub(now))
}

// launch starts granted operations on new workers and watches
// dependencies. Call without s.mu.
func (s *Scheduler) launch(grants []*task, watch []*Work) {
	for _, t := range grants {
		if t.light {
			go s.work(t)
			continue
		}
		// A caller that waits at once (a synchronous op) runs the op itself
		// (Work.RunInline) with no thread hand-off; the worker starts a
		// moment later, for work nobody waits on yet, and finds the op
		// claimed if the waiter took it.
		if s.waiters.Load() > 0 || t.eager.Load() {
			go s.work(t) // a waiter is blocked already (Work.Wait), or none will come (Work.Start)
			continue
		}
		s.armGrace(t)
	}
	for _, dep := range watch {
		dep.OnComplete(func(error) { s.kick() })
	}
}

// startGranted starts a worker now for every granted operation nobody has
// claimed: a waiter about to block must not wait out their grace, whether
// it waits for one of them or for an op queued behind one (Work.Wait).
func (s *Scheduler) startGranted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		if t := st.running; t != nil && !t.claimed.Load() {
			go s.work(t) // work claims t, or finds it claimed and returns
		}
	}
}

// startIfGranted starts a worker for t now if t is its stream's granted,
// unclaimed operation.
func (s *Scheduler) startIfGranted(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.granted && !t.claimed.Load() {
		go s.work(t)
	}
}

// work is a worker: it runs t, then the operation granted next on t's
// stream (or another one granted at the same moment), until none is left.
func (s *Scheduler) work(t *task) {
	for t != nil {
		if !t.claimed.CompareAndSwap(false, true) {
			return // a waiter runs it (Work.RunInline) and dispatches after it
		}
		s.graceClaimed()
		t = s.finish(t, t.execute(), true)
	}
}

// finish ends a claimed operation that ran with status err: it frees the
// stream and the worker, dispatches, and completes the operation's Work.
// A worker (asWorker) gets one of the new grants back to run next; the
// others start on new workers.
func (s *Scheduler) finish(t *task, err error, asWorker bool) (next *task) {
	st := t.stream
	<-st.slots // room for one more submission, before callbacks run
	// Complete while the stream still runs t: nothing queued behind it can
	// start (on a worker, or inline under a waiter) and complete before t's
	// callbacks have run, so a stream's completions stay in order.
	t.work.Complete(err)
	var room [grantRoom]*task
	s.mu.Lock()
	st.running = nil
	if !t.light {
		s.running--
	}
	grants, watch := s.dispatchLocked(time.Now(), room[:0])
	drained := st.closed && len(st.queue) == 0 && st.running == nil && !st.drainedClosed
	if drained {
		st.drainedClosed = true
	}
	s.mu.Unlock()
	if asWorker && len(grants) > 0 {
		i := slices.IndexFunc(grants, func(g *task) bool { return g.stream == st })
		if i < 0 {
			i = 0
		}
		next = grants[i]
		grants = grants[:i+copy(grants[i:], grants[i+1:])]
	}
	s.launch(grants, watch)
	if drained {
		close(st.drained)
	}
	return next
}

// describe names a stream for errors.
func (s *Scheduler) describe(st *Stream) string {
	return fmt.Sprintf("%s/%s", s.name, st.name)
}
