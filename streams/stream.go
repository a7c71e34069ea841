package streams

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// ErrStreamClosed completes work submitted to a closed stream.
var ErrStreamClosed = errors.New("stream closed")

// DefaultDepth bounds the operations queued on one stream. A submitter that
// finds the queue full waits (back-pressure) instead of growing memory.
const DefaultDepth = 1024

type task struct {
	run  func() error
	work *Work
}

// Stream runs submitted operations one at a time, in order, on its own
// goroutine.
type Stream struct {
	name  string
	queue chan task

	mu     sync.Mutex // guards closed against concurrent Submit/Close
	closed bool
	exited chan struct{}
}

// New starts a stream named name with room for depth queued operations
// (depth <= 0: DefaultDepth).
func New(name string, depth int) *Stream {
	if depth <= 0 {
		depth = DefaultDepth
	}
	s := &Stream{name: name, queue: make(chan task, depth), exited: make(chan struct{})}
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
	s.queue <- task{run: run, work: w}
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
		t.work.markStarted()
		t.work.Complete(runSafely(t.run))
	}
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
