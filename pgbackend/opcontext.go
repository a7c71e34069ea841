package pgbackend

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// opContext is context.WithDeadline(parent, deadline) that makes its timer
// (and registers with parent) only when something needs its Done channel or
// a value: a small op on shared memory finishes before anyone does, and the
// timer would cost more than the op. Err is exact either way: parent's error,
// or DeadlineExceeded once the deadline has passed. It also carries the
// op's traffic counters (stats.go), which context.WithValue would cost an
// allocation per op to add. It is part of its op (commOp): no allocation
// of its own.
type opContext struct {
	parent   context.Context
	deadline time.Time // with a monotonic reading: Err reads one clock
	traffic  *trafficCounters

	mu     sync.Mutex
	inner  atomic.Pointer[context.Context] // set once, by materialize
	cancel context.CancelFunc
	closed bool // release ran: nothing may create a timer any more
}

// newOpContext starts an op's context: parent's values and cancellation,
// ending at now + timeout.
func newOpContext(parent context.Context, timeout time.Duration) *opContext {
	o := &opContext{}
	o.init(parent, time.Now().Add(timeout), nil)
	return o
}

// init readies a zero opContext: parent's values and cancellation, ending
// at deadline, counting its messages in traffic (nil: by their tag).
func (o *opContext) init(parent context.Context, deadline time.Time, traffic *trafficCounters) {
	o.parent, o.deadline, o.traffic = parent, deadline, traffic
}

// materialize returns the real context, creating it on first use.
func (o *opContext) materialize() context.Context {
	if c := o.inner.Load(); c != nil {
		return *c
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.inner.Load(); c != nil {
		return *c
	}
	c, cancel := context.WithDeadline(o.parent, o.deadline)
	if o.closed {
		cancel() // used after release: behave as a finished context
	}
	o.cancel = cancel
	o.inner.Store(&c)
	return c
}

// release ends the context (the op is over) and frees its timer, if any.
func (o *opContext) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.cancel != nil {
		o.cancel()
	}
}

func (o *opContext) Deadline() (time.Time, bool) { return o.deadline, true }

func (o *opContext) Done() <-chan struct{} { return o.materialize().Done() }

// Value goes through the real context (context.Cause and AfterFunc find
// the cancellation state of a context by a value lookup), but for the
// traffic counters, asked for every message.
func (o *opContext) Value(key any) any {
	if _, ok := key.(trafficKey); ok {
		if o.traffic != nil {
			return o.traffic
		}
		return o.parent.Value(key)
	}
	return o.materialize().Value(key)
}

func (o *opContext) Err() error {
	if c := o.inner.Load(); c != nil {
		return (*c).Err()
	}
	if err := o.parent.Err(); err != nil {
		return err
	}
	if time.Until(o.deadline) <= 0 { // the monotonic clock alone
		return context.DeadlineExceeded
	}
	return nil
}
