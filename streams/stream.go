package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// ErrStreamClosed completes work submitted to a closed stream.
var ErrStreamClosed = errors.New("stream closed")

// Stream is a FIFO of operations of a Scheduler: they start in submission
// order, each after the previous one has completed.
type Stream struct {
	sched    *Scheduler
	name     string
	priority int
	slots    chan struct{} // a token per queued or running operation: back-pressure
	drained  chan struct{} // closed once the stream is closed and empty

	// Guarded by sched.mu.
	queue         []*task // not started yet; queue[0] is next
	running       *task
	closed        bool
	drainedClosed bool
}

// New returns a stream with a scheduler of its own (no budget): a plain
// FIFO run on worker goroutines, with room for depth operations (depth <=
// 0: DefaultDepth).
func New(name string, depth int) *Stream {
	return NewScheduler(name, Config{Depth: depth}).NewStream(name, 0, depth)
}

// Name is the stream's name.
func (s *Stream) Name() string { return s.name }

// Priority is the stream's priority (higher is granted workers first).
func (s *Stream) Priority() int { return s.priority }

// Depth is the most operations the stream holds, queued and running.
func (s *Stream) Depth() int { return cap(s.slots) }

// Reservation is room for one operation on a stream (Stream.Reserve). It
// must be used by Submit or given back by Cancel.
type Reservation struct {
	s    *Stream
	used atomic.Bool
}

// Reserve waits until the stream has room for one more operation, or ctx
// ends. Taking the room first lets a caller number an operation (e.g. give
// it the next sequence number of a collective) only once it is sure to be
// queued.
func (s *Stream) Reserve(ctx context.Context) (*Reservation, error) {
	if r := s.TryReserve(); r != nil {
		return r, nil
	}
	select {
	case s.slots <- struct{}{}:
		return &Reservation{s: s}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("stream %s: waiting for room (%d operations queued): %w",
			s.sched.describe(s), cap(s.slots), context.Cause(ctx))
	}
}

// TryReserve is Reserve without waiting: nil when the stream is full.
func (s *Stream) TryReserve() *Reservation {
	select {
	case s.slots <- struct{}{}:
		return &Reservation{s: s}
	default:
		return nil
	}
}

// Submit queues run on the reserved room and returns its Work at once. run
// starts after the stream's earlier operations and after deps (Works of
// any stream) have completed; its error, or a recovered panic, becomes the
// Work's status.
func (r *Reservation) Submit(desc string, run func() error, deps ...*Work) *Work {
	if w := r.use(desc); w != nil {
		return w
	}
	return r.s.enqueue(desc, run, deps, false)
}

// After queues, on the reserved room, a marker that completes with other's
// status once other (a Work of any stream) has: later operations of the
// stream start after it. It is the cross-stream event wait of CUDA/NCCL,
// and holds no worker while it waits.
func (r *Reservation) After(other *Work) *Work {
	desc := "wait for " + other.Desc()
	if w := r.use(desc); w != nil {
		return w
	}
	return r.s.enqueue(desc, other.Err, []*Work{other}, true)
}

// Record queues, on the reserved room, a marker that completes (with
// status nil) once every operation submitted to the stream before it has
// completed: an event other streams can wait for (After, or the deps of
// Submit).
func (r *Reservation) Record(desc string) *Work {
	desc = "event " + desc
	if w := r.use(desc); w != nil {
		return w
	}
	return r.s.enqueue(desc, func() error { return nil }, nil, true)
}

// Cancel gives unused room back; it does nothing after it was used.
func (r *Reservation) Cancel() {
	if r.used.CompareAndSwap(false, true) {
		<-r.s.slots
	}
}

// use marks the reservation used; a second use gets a failed Work.
func (r *Reservation) use(desc string) *Work {
	if r.used.CompareAndSwap(false, true) {
		return nil
	}
	w := NewWork(desc)
	w.Complete(fmt.Errorf("%s on stream %s: reservation already used", desc, r.s.name))
	return w
}

// Submit queues run and returns its Work at once, or, when the stream is
// full, as soon as it has room (Reserve bounds that wait). run starts after
// the stream's earlier operations and after deps have completed; its
// error, or a recovered panic, becomes the Work's status.
func (s *Stream) Submit(desc string, run func() error, deps ...*Work) *Work {
	return s.reserve().Submit(desc, run, deps...)
}

// After is Reservation.After on room waited for without a deadline.
func (s *Stream) After(other *Work) *Work { return s.reserve().After(other) }

// Record is Reservation.Record on room waited for without a deadline.
func (s *Stream) Record(desc string) *Work { return s.reserve().Record(desc) }

// reserve waits for room without a deadline.
func (s *Stream) reserve() *Reservation {
	s.slots <- struct{}{}
	return &Reservation{s: s}
}

// queued is an operation's Work and task, allocated together.
type queued struct {
	work Work
	task task
}

// enqueue adds an operation on room already taken from s.slots.
func (s *Stream) enqueue(desc string, run func() error, deps []*Work, light bool) *Work {
	q := &queued{}
	w, t := &q.work, &q.task
	w.init(desc)
	sch := s.sched
	sch.mu.Lock()
	if s.closed {
		sch.mu.Unlock()
		<-s.slots
		w.Complete(fmt.Errorf("%s on stream %s: %w", desc, s.name, ErrStreamClosed))
		return w
	}
	t.run, t.work, t.stream, t.deps, t.light, t.seq = run, w, s, slices.Clone(deps), light, sch.nextSeq
	w.task = t
	sch.nextSeq++
	s.queue = append(s.queue, t)
	var room [grantRoom]*task
	grants, watch := room[:0], []*Work(nil)
	if s.running == nil && len(s.queue) == 1 { // only a new head changes what is ready
		grants, watch = sch.dispatchLocked(time.Now(), grants)
	}
	sch.mu.Unlock()
	sch.launch(grants, watch)
	return w
}

// Close stops accepting work, lets queued work run to completion, and waits
// until it has. Queued work whose dependencies never complete keeps it
// waiting. It is idempotent.
func (s *Stream) Close() {
	sch := s.sched
	sch.mu.Lock()
	s.closed = true
	if s.running == nil && len(s.queue) == 0 && !s.drainedClosed {
		s.drainedClosed = true
		close(s.drained)
	}
	sch.mu.Unlock()
	<-s.drained
}
