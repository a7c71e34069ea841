package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrTimeout is returned by Work.Wait when the wait ran out of time. The
// operation itself keeps running.
var ErrTimeout = errors.New("wait timed out")

// Work is the handle of one submitted operation.
type Work struct {
	desc string // "" for an Op, which describes itself (Desc)
	task *task  // the queued operation, nil for a Work made by NewWork

	// started points to the task's Stamps.Started once it has started.
	started atomic.Pointer[time.Time]

	mu        sync.Mutex
	err       error
	completed bool
	// done is made on demand (Done, or a Wait that must block): most
	// works complete before anyone waits on a channel.
	done      chan struct{}
	callbacks []func(error)
	cbRoom    [1]func(error) // callbacks' first room: one per op is common
	finished  time.Time
}

// NewWork returns an incomplete Work described by desc (used in errors and
// traces, e.g. "allreduce seq 7").
func NewWork(desc string) *Work {
	return &Work{desc: desc}
}

// Desc describes the operation.
func (w *Work) Desc() string {
	if w.desc == "" && w.task != nil && w.task.op != nil {
		return w.task.op.Desc()
	}
	return w.desc
}

// Done is closed when the work has completed.
func (w *Work) Done() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		w.done = make(chan struct{})
		if w.completed {
			close(w.done)
		}
	}
	return w.done
}

// Complete records the status of the work and runs its callbacks, in the
// order they were added, on the calling goroutine. Only the first call has an
// effect; it reports whether it was the first.
func (w *Work) Complete(err error) bool { return w.complete(err, time.Now()) }

// complete is Complete with the time it finished.
func (w *Work) complete(err error, finished time.Time) bool {
	w.mu.Lock()
	if w.completed {
		w.mu.Unlock()
		return false
	}
	w.completed = true
	w.err = err
	w.finished = finished
	cbs := w.callbacks
	w.callbacks = nil
	if w.done != nil {
		close(w.done)
	}
	w.mu.Unlock()
	// Callbacks run without the lock: they may call back into the Work.
	for _, cb := range cbs {
		cb(err)
	}
	return true
}

// OnComplete registers cb to run once with the work's status. If the work
// has already completed, cb runs at once on the calling goroutine.
func (w *Work) OnComplete(cb func(error)) {
	w.mu.Lock()
	if !w.completed {
		if w.callbacks == nil {
			w.callbacks = w.cbRoom[:0]
		}
		w.callbacks = append(w.callbacks, cb)
		w.mu.Unlock()
		return
	}
	err := w.err
	w.mu.Unlock()
	cb(err)
}

// Test reports whether the work has completed, and its status if so.
func (w *Work) Test() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.completed, w.err
}

// Err is the work's status: nil while running or after success.
func (w *Work) Err() error {
	_, err := w.Test()
	return err
}

// RunInline runs the work's operation on the calling goroutine when it is
// next in line on its stream, its dependencies are done, a worker is free
// and no worker has claimed it yet: a caller that is about to wait anyway
// saves two thread hand-offs (to a worker goroutine and back), which
// dominate the latency of small operations. It reports whether it ran the
// operation.
func (w *Work) RunInline() bool {
	return w.task != nil && w.task.runInline()
}

// Start tells the scheduler that nobody will run the work's operation
// inline (the caller follows it through callbacks or a future, as DDP
// does): it starts on a worker as soon as it is granted, without the inline
// grace. Harmless on work that runs or has completed.
func (w *Work) Start() {
	t := w.task
	if t == nil || t.eager.Swap(true) {
		return
	}
	t.stream.sched.startIfGranted(t)
}

// Wait blocks until the work completes, ctx ends, or timeout passes
// (timeout <= 0: no limit besides ctx). It returns the work's status, or an
// error wrapping ErrTimeout or ctx.Err().
func (w *Work) Wait(ctx context.Context, timeout time.Duration) error {
	if done, err := w.Test(); done {
		return err // the common case after RunInline: no channel, no timer
	}
	// Announce the wait, then start what is granted: an op granted before
	// the announcement (this one, or one it queues behind) starts now; one
	// granted after it sees the waiter (Scheduler.launch) and starts at once.
	if w.task != nil {
		s := w.task.stream.sched
		s.waiters.Add(1)
		defer s.waiters.Add(-1)
		s.startGranted()
	}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-w.Done():
		return w.Err()
	case <-timer:
		return fmt.Errorf("%s: %w after %v", w.Desc(), ErrTimeout, timeout)
	case <-ctx.Done():
		return fmt.Errorf("%s: wait: %w", w.Desc(), ctx.Err())
	}
}

// Times returns when the work started running and when it completed (zero
// values if it has not yet).
func (w *Work) Times() (started, finished time.Time) {
	if p := w.started.Load(); p != nil {
		started = *p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return started, w.finished
}
