package streams

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// task is one queued operation.
type task struct {
	run    func() error // Submit's closure, or nil for an Op
	op     Op
	work   *Work
	stream *Stream
	deps   []*Work // Works that must complete before it starts
	light  bool    // a marker (After, Record): needs no worker budget
	seq    uint64  // submission order across the scheduler

	// Guarded by the scheduler's mu.
	readySince time.Time // when it was first found waiting for a worker (deferral limit)
	watching   *Work     // the dependency whose completion kicks dispatch
	granted    bool      // it is its stream's running operation
	graceDue   time.Time // when a worker starts it unless claimed (zero: none)

	// Exactly one of the worker it was granted to and a waiter
	// (Work.RunInline) claims it and runs it.
	claimed atomic.Bool
	// eager: the caller will not run it inline (Work.Start): no grace.
	eager atomic.Bool

	// stamps: Issued is set when it is queued (or first needed), Started
	// by whoever claims it, Ended when it has run. Only that goroutine
	// touches Started and Ended until the task has finished.
	stamps Stamps
}

// pendingDep returns a dependency not yet complete, or nil.
func (t *task) pendingDep() *Work {
	for _, d := range t.deps {
		if done, _ := d.Test(); !done {
			return d
		}
	}
	return nil
}

// execute runs the claimed operation, started at the time in t.stamps, and
// returns its status; t.stamps.Ended is set when it returns.
func (t *task) execute() error {
	t.work.started.Store(&t.stamps.Started)
	var err error
	if t.op != nil {
		err = runSafely(func() error { return t.op.Run(&t.stamps) })
	} else {
		err = runSafely(t.run)
	}
	if t.stamps.Ended.IsZero() {
		t.stamps.Ended = t.stream.sched.clock.Now()
	}
	return err
}

// runInline runs the task on the calling goroutine if it is, or may now
// become, its stream's running operation and nobody has claimed it.
func (t *task) runInline() bool {
	if t.claimed.Load() {
		return false // a worker runs it, or ran it
	}
	sch := t.stream.sched
	sch.mu.Lock()
	if !t.granted {
		st := t.stream
		if st.running != nil || len(st.queue) == 0 || st.queue[0] != t || st.heldLocked() ||
			t.pendingDep() != nil || !(t.light || sch.hasWorkerLocked()) {
			sch.mu.Unlock()
			return false
		}
		sch.grantLocked(t)
	}
	if !t.claimed.CompareAndSwap(false, true) {
		sch.mu.Unlock()
		return false
	}
	// Read under mu: the previous op of the stream ended before t was
	// granted, so t starts after it on the clock too.
	t.stamps.Started = sch.clock.Now()
	sch.claimedLocked(t.stamps.Started)
	sch.mu.Unlock()
	sch.claimedInline()
	sch.finish(t, t.execute(), false)
	return true
}

// runSafely turns a panic into an error: a bug in one operation must fail
// that operation, not the process that hosts the library.
func runSafely(run func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: panic: %v\n%s", r, debug.Stack())
		}
	}()
	return run()
}
