package streams

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// ErrStreamClosed completes work submitted to a closed stream.
var ErrStreamClosed = errors.New("stream closed")

// DefaultDepth bounds the operations queued on one stream. A submitter that
// finds the queue full waits (back-pressure) instead of growing memory.
const DefaultDepth = 1024

// task is one queued operation. Exactly one of the stream's goroutine and a
// waiter (Work.RunInline) claims it and runs it.
type task struct {
	run     func() error
	work    *Work
	stream  *Stream
	index   uint64 // position in the stream: it may run once index tasks are done
	claimed atomic.Bool
}

// Stream runs submitted operations one at a time, in order, on its own
// goroutine.
type Stream struct {
	name  string
	queue chan *task

	mu        sync.Mutex // guards closed and submitted against Submit/Close
	closed    bool
	submitted uint64        // tasks submitted so far
	done      atomic.Uint64 // tasks completed so far, in order
	exited    chan struct{}
}

// New starts a stream named name with room for depth queued operations
// (depth <= 0: DefaultDepth).
func New(name string, depth int) *Stream {
	if depth <= 0 {
		depth = DefaultDepth
	}
	s := &Stream{name: name, queue: make(chan *task, depth), exited: make(chan struct{})}
	go s.loop()
	return s
}

// Name is the stream's name.
func (s *Stream) Name() string { return s.name }

// Submit queues run and returns its Work at once (or, when the queue is full,
// as soon as there is room). run's error, or a recovered panic, becomes the
// work's status.
func (s *Stream) Submit(desc string, run func() error) *Work {
	w := NewWork(desc)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		w.Complete(fmt.Errorf("%s on stream %s: %w", desc, s.name, ErrStreamClosed))
		return w
	}
	// Sending while holding mu keeps Close from closing the channel under
	// us; the loop goroutine never takes mu, so a full queue still drains.
	t := &task{run: run, work: w, stream: s, index: s.submitted}
	s.submitted++
	w.task = t
	s.queue <- t
	s.mu.Unlock()
	return w
}

// After queues an operation that waits for other to complete, so later
// operations on s run after it: the cross-stream event of CUDA/NCCL. It
// completes with other's status.
func (s *Stream) After(other *Work) *Work {
	return s.Submit("wait for "+other.Desc(), func() error {
		<-other.Done()
		return other.Err()
	})
}

// Close stops accepting work, lets queued work run to completion, and waits
// for the stream's goroutine to exit. It is idempotent.
func (s *Stream) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.mu.Unlock()
	<-s.exited
}

func (s *Stream) loop() {
	defer close(s.exited)
	for t := range s.queue {
		if t.claimed.CompareAndSwap(false, true) {
			t.execute()
		} else {
			<-t.work.done // a waiter runs it; the next task must wait for it
		}
	}
}

// execute runs a claimed task and completes its work. done advances before
// the work completes, so whoever the completion wakes sees the stream's
// next task as runnable.
func (t *task) execute() {
	t.work.markStarted()
	err := runSafely(t.run)
	t.stream.done.Add(1)
	t.work.Complete(err)
}

// runInline runs the task on the calling goroutine if every earlier task of
// its stream has completed and nobody has claimed it yet.
func (t *task) runInline() bool {
	if t.stream.done.Load() != t.index || !t.claimed.CompareAndSwap(false, true) {
		return false
	}
	t.execute()
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
