package shm

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

// wait blocks until ready reports true: it spins for cfg.SpinTime, then
// yields the processor between polls for cfg.YieldTime, then sleeps on the
// futex word, announcing itself in waiters so that the party that makes
// ready true knows to wake it. check is polled too and ends the wait with its
// error; so does ctx. Sleeps last at most cfg.LivenessInterval, so check
// runs at least that often.
func (e *Endpoint) wait(ctx context.Context, ready func() bool, check func() error, waiters, word *atomic.Uint32) error {
	if ready() {
		return nil
	}
	start := time.Now()
	spinEnd := e.cfg.SpinTime
	yieldEnd := spinEnd + e.cfg.YieldTime
	var y futex.Yielder
	var stopWake func() bool
	defer func() {
		if stopWake != nil {
			stopWake()
		}
	}()
	for {
		if ready() {
			return nil
		}
		if err := check(); err != nil {
			if ready() {
				// The peer got there before it closed or failed (a receiver
				// frees the slot it read, then may close at once).
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		elapsed := time.Since(start)
		if elapsed < spinEnd {
			continue
		}
		if elapsed < yieldEnd {
			y.Yield()
			continue
		}
		if stopWake == nil {
			// Cancellation must end the sleep, not only the deadline.
			stopWake = context.AfterFunc(ctx, func() { e.wakeWord(word) })
		}
		v := word.Load()
		waiters.Store(1)
		if ready() {
			waiters.Store(0)
			return nil
		}
		d := e.cfg.LivenessInterval
		if dl, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(dl))
		}
		err := futex.Wait(word, v, d)
		waiters.Store(0)
		if err != nil {
			return err
		}
	}
}

// wakeWord wakes the sleepers on a futex word of a mapping, unless the
// endpoint is closed (the mapping may be gone).
func (e *Endpoint) wakeWord(word *atomic.Uint32) {
	e.life.RLock()
	defer e.life.RUnlock()
	if !e.closed.Load() {
		word.Add(1)
		futex.WakeAll(word)
	}
}
