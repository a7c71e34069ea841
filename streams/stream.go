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
	room     *room         // a place per queued or running operation: back-pressure
	drained  chan struct{} // closed once the stream is closed and empty
	hold     atomic.Uint32 // holdHeld, holdBusy (hold.go)

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
func (s *Stream) Depth() int { return int(s.room.depth) }

// Reservation is room for one operation on a stream (Stream.Reserve). It
// must be used by Submit or given back by Cancel.
type Reservation struct {
	s    *Stream
	q    *queued // the operation's Work and task, allocated with the room
	used atomic.Bool
}

// queued is an operation's Work and task and the room it was queued on,
// allocated together: one allocation per operation.
type queued struct {
	work Work
	task task
	res  Reservation
}

// newReservation allocates an operation on room taken on s.
func (s *Stream) newReservation() *Reservation {
	q := &queued{}
	q.res.s, q.res.q = s, q
	return &q.res
}

// Reserve waits until the stream has room for one more operation, or ctx
// ends. Taking the room first lets a caller number an operation (e.g. give
// it the next sequence number of a collective) only once it is sure to be
// queued.
func (s *Stream) Reserve(ctx context.Context) (*Reservation, error) {
	if err := s.room.take(ctx); err != nil {
		return nil, fmt.Errorf("stream %s: waiting for room (%d operations queued): %w",
			s.sched.describe(s), s.Depth(), err)
	}
	return s.newReservation(), nil
}

// TryReserve is Reserve without waiting: nil when the stream is full.
func (s *Stream) TryReserve() *Reservation {
	if !s.room.tryTake() {
		return nil
	}
	return s.newReservation()
}

// Submit queues run on the reserved room and returns its Work at once. run
// starts after the stream's earlier operations and after deps (Works of
// any stream) have completed; its error, or a recovered panic, becomes the
// Work's status.
func (r *Reservation) Submit(desc string, run func() error, deps ...*Work) *Work {
	if !r.use() {
		return r.reused(desc)
	}
	return r.s.enqueue(r.q, taskSpec{desc: desc, run: run, deps: deps})
}

// After queues, on the reserved room, a marker that completes with other's
// status once other (a Work of any stream) has: later operations of the
// stream start after it. It is the cross-stream event wait of CUDA/NCCL,
// and holds no worker while it waits.
func (r *Reservation) After(other *Work) *Work {
	desc := "wait for " + other.Desc()
	if !r.use() {
		return r.reused(desc)
	}
	return r.s.enqueue(r.q, taskSpec{desc: desc, run: other.Err, deps: []*Work{other}, light: true})
}

// Record queues, on the reserved room, a marker that completes (with
// status nil) once every operation submitted to the stream before it has
// completed: an event other streams can wait for (After, or the deps of
// Submit).
func (r *Reservation) Record(desc string) *Work {
	desc = "event " + desc
	if !r.use() {
		return r.reused(desc)
	}
	return r.s.enqueue(r.q, taskSpec{desc: desc, run: func() error { return nil }, light: true})
}

// Cancel gives unused room back; it does nothing after it was used.
func (r *Reservation) Cancel() {
	if r.use() {
		r.s.room.give()
	}
}

// use marks the reservation used and reports whether this was its first
// use.
func (r *Reservation) use() bool { return r.used.CompareAndSwap(false, true) }

// reused is the failed Work of a second use of a reservation.
func (r *Reservation) reused(desc string) *Work {
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
	_ = s.room.take(context.Background()) // cannot fail: no deadline
	return s.newReservation()
}

// taskSpec is what an operation is made of (Submit, SubmitOp, markers).
type taskSpec struct {
	desc   string
	run    func() error
	op     Op
	issued time.Time // zero: read when needed
	deps   []*Work
	light  bool
}

// enqueue adds the operation of q (its Work and task), on room already
// taken on s.room.
func (s *Stream) enqueue(q *queued, spec taskSpec) *Work {
	w, t := &q.work, &q.task
	w.desc, w.task = spec.desc, t
	t.run, t.op, t.work, t.stream, t.light = spec.run, spec.op, w, s, spec.light
	t.stamps.Issued = spec.issued
	sch := s.sched
	now := lazyNow{clock: sch.clock, t: spec.issued}
	sch.mu.Lock()
	if s.closed {
		sch.mu.Unlock()
		s.room.give()
		w.complete(fmt.Errorf("%s on stream %s: %w", w.Desc(), s.name, ErrStreamClosed), now.get())
		return w
	}
	if len(spec.deps) > 0 {
		t.deps = slices.Clone(spec.deps)
	}
	t.seq = sch.nextSeq
	sch.nextSeq++
	s.queue = append(s.queue, t)
	s.hold.Or(holdBusy) // before the dispatch below looks at holdHeld
	var room [grantRoom]*task
	grants, watch := room[:0], []*Work(nil)
	if s.running == nil && len(s.queue) == 1 { // only a new head changes what is ready
		grants, watch = sch.dispatchLocked(&now, grants)
		grants = sch.holdLocked(grants, &now)
	}
	if t.stamps.Issued.IsZero() {
		t.stamps.Issued = now.t // the dispatch's reading, if it took one
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
