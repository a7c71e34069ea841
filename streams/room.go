package streams

import (
	"context"
	"sync"
	"sync/atomic"
)

// room is a stream's back-pressure: a count of its queued and running
// operations, bounded by its depth. Taking and giving back a place are
// atomic operations (a channel used as a semaphore costs two locks per
// operation); only a submitter that finds the stream full waits, on a
// channel made for the wait.
type room struct {
	depth   int64
	taken   atomic.Int64
	waiters atomic.Int32 // submitters waiting for a place

	mu    sync.Mutex
	freed chan struct{} // closed when a place is given back while someone waits; nil: none made
}

func newRoom(depth int) *room { return &room{depth: int64(depth)} }

// tryTake takes a place if there is one.
func (r *room) tryTake() bool {
	for {
		n := r.taken.Load()
		if n >= r.depth {
			return false
		}
		if r.taken.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// take waits for a place until ctx ends.
func (r *room) take(ctx context.Context) error {
	if r.tryTake() {
		return nil
	}
	// Announce the wait before looking again: a place given back after
	// the announcement closes freed; one given back before it is seen by
	// the look.
	r.waiters.Add(1)
	defer r.waiters.Add(-1)
	for {
		r.mu.Lock()
		if r.freed == nil {
			r.freed = make(chan struct{})
		}
		freed := r.freed
		r.mu.Unlock()
		if r.tryTake() {
			return nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// give gives a place back and wakes the submitters waiting for one.
func (r *room) give() {
	r.taken.Add(-1)
	if r.waiters.Load() == 0 {
		return
	}
	r.mu.Lock()
	if r.freed != nil {
		close(r.freed)
		r.freed = nil
	}
	r.mu.Unlock()
}
