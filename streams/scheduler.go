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
	// Clock times the operations (zero: a new one). A caller that times
	// the operations too (SubmitOp) shares it, so that their readings
	// agree.
	Clock Clock
}

// Scheduler grants workers to the ready operations of its streams: by
// priority, within a budget, with a deferral limit (see the package doc).
type Scheduler struct {
	name  string
	cfg   Config
	clock Clock

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
	graceArms  int // how often it was armed (tests)

	// inlineStreak counts the latest operations that waiters claimed
	// before their grace ran out (reset when a worker had to start one):
	// a long streak means the caller waits on everything it issues.
	inlineStreak atomic.Int32
	// waiters counts goroutines blocked in Work.Wait on this scheduler's
	// operations: while there are any, granted ops start without grace.
	waiters atomic.Int32
	// lastRun is how long the operation that finished last ran (ns): the
	// guess of how long the next one runs (grace.go).
	lastRun atomic.Int64
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
	if cfg.Clock.IsZero() {
		cfg.Clock = NewClock()
	}
	s := &Scheduler{name: name, cfg: cfg, clock: cfg.Clock}
	// Both timers are made here, stopped, and re-armed when needed. Made
	// here, not where they are armed, they leave the dispatch functions
	// out of a call cycle, which the compiler's escape analysis would
	// otherwise treat coarsely: the room for a dispatch's grants would move
	// to the heap, an allocation per operation.
	s.timer = stoppedTimer(s.kick)
	s.graceTimer = stoppedTimer(s.graceExpired)
	return s
}

// stoppedTimer returns a timer that runs f once it is Reset.
func stoppedTimer(f func()) *time.Timer {
	t := time.AfterFunc(time.Hour, f)
	t.Stop()
	return t
}

// Config returns the scheduler's settings, defaults filled in.
func (s *Scheduler) Config() Config { return s.cfg }

// Clock is the clock that times the scheduler's operations.
func (s *Scheduler) Clock() Clock { return s.clock }

// NewStream adds a stream; higher priority values are granted workers
// first. depth <= 0 takes the scheduler's default depth.
func (s *Scheduler) NewStream(name string, priority, depth int) *Stream {
	if depth <= 0 {
		depth = s.cfg.Depth
	}
	st := &Stream{
		sched: s, name: name, priority: priority,
		room: newRoom(depth), drained: make(chan struct{}),
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
	s.timer.Stop()
	s.graceTimer.Stop()
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
	now := lazyNow{clock: s.clock}
	s.mu.Lock()
	grants, watch := s.dispatchLocked(&now, room[:0])
	grants = s.holdLocked(grants, &now)
	s.mu.Unlock()
	s.launch(grants, watch)
}

// dispatchLocked grants workers to ready operations by the rules of the
// package doc. It appends the granted operations to grants (room the
// caller provides, so that a dispatch allocates nothing in the common case)
// and returns the dependencies to watch (their completion kicks s). The
// caller then gives the grants their grace (holdLocked) and starts the
// others once s.mu is released (launch).
func (s *Scheduler) dispatchLocked(now *lazyNow, grants []*task) (_ []*task, watch []*Work) {
	var room [grantRoom]*task
	ready := room[:0]
	for _, st := range s.streams {
		if st.running != nil || len(st.queue) == 0 || st.heldLocked() {
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
		if !s.hasWorkerLocked() {
			if t.readySince.IsZero() {
				t.readySince = now.get()
			}
			due := t.readySince.Add(s.cfg.DeferLimit)
			if now.get().Before(due) {
				if deadline.IsZero() || due.Before(deadline) {
					deadline = due
				}
				continue
			}
		}
		s.grantLocked(t)
		grants = append(grants, t)
	}
	if !deadline.IsZero() {
		s.armTimerLocked(deadline, now.get())
	}
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

// armTimerLocked makes sure dispatch runs again by deadline. A timer that
// fires early or needlessly only causes a spare dispatch.
func (s *Scheduler) armTimerLocked(deadline, now time.Time) {
	if s.stopping {
		return
	}
	if !s.timerAt.IsZero() && s.timerAt.After(now) && !s.timerAt.After(deadline) {
		return // an armed timer fires in time
	}
	s.timerAt = deadline
	s.timer.Reset(deadline.Sub(now))
}

// holdLocked gives the granted ops that a waiter may still claim their
// inline grace and returns the others, to start on workers at once:
// markers, and ops with a waiter blocked already (Work.Wait) or none to
// come (Work.Start). A caller that waits at once (a synchronous op) runs
// the op itself (Work.RunInline) with no thread hand-off; a worker starts
// it when its grace has run out, for work nobody waits on yet (grace.go).
func (s *Scheduler) holdLocked(grants []*task, now *lazyNow) []*task {
	n := 0
	for _, t := range grants {
		if !t.light && s.waiters.Load() == 0 && !t.eager.Load() && !s.stopping {
			s.armGraceLocked(t, now.get())
			continue
		}
		grants[n] = t
		n++
	}
	return grants[:n]
}

// launch starts granted operations on new workers and watches
// dependencies. Call without s.mu.
func (s *Scheduler) launch(grants []*task, watch []*Work) {
	for _, t := range grants {
		go s.work(t) // work claims t, or finds it claimed and returns
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
		t.stamps.Started = s.clock.Now()
		s.mu.Lock()
		s.claimedLocked(t.stamps.Started)
		s.mu.Unlock()
		t = s.finish(t, t.execute(), true)
	}
}

// finish ends a claimed operation that ran with status err: it frees the
// stream and the worker, dispatches, and completes the operation's Work.
// A worker (asWorker) gets one of the new grants back to run next; the
// others start on new workers.
func (s *Scheduler) finish(t *task, err error, asWorker bool) (next *task) {
	st := t.stream
	st.room.give() // room for one more submission, before callbacks run
	ended := t.stamps.Ended
	if !t.light {
		s.lastRun.Store(int64(ended.Sub(t.stamps.Started)))
	}
	// Complete while the stream still runs t: nothing queued behind it can
	// start (on a worker, or inline under a waiter) and complete before t's
	// callbacks have run, so a stream's completions stay in order.
	t.work.complete(err, ended)
	var room [grantRoom]*task
	now := lazyNow{clock: s.clock, t: ended}
	s.mu.Lock()
	st.running = nil
	if !t.light {
		s.running--
	}
	if len(st.queue) == 0 {
		st.hold.And(^holdBusy) // idle: a holder may take it (hold.go)
	}
	grants, watch := s.dispatchLocked(&now, room[:0])
	if asWorker && len(grants) > 0 {
		// The worker goes on with the next op of its stream, or another.
		i := 0
		for j, g := range grants {
			if g.stream == st {
				i = j
				break
			}
		}
		next = grants[i]
		grants = grants[:i+copy(grants[i:], grants[i+1:])]
	}
	grants = s.holdLocked(grants, &now)
	drained := st.closed && len(st.queue) == 0 && st.running == nil && !st.drainedClosed
	if drained {
		st.drainedClosed = true
	}
	s.mu.Unlock()
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
