package symm

import (
	"context"
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

// Signals are counters: Signal(dst) adds one to the line of this rank in
// dst's segment; WaitSignal(src) waits until src's line in this rank's
// segment exceeds the signals this rank has consumed from src, and
// consumes one. So n signals are matched by n waits, none is lost, and a
// signal sent before its wait began is not missed.
//
// A waiter spins briefly, then sleeps on the bell of its own segment, which
// every Signal and Barrier arrival rings (with a futex wake-up only when a
// sleeper announced itself). While it sleeps it tests the liveness of the
// peer it waits for every pollEvery.

const (
	spinFor   = 20 * time.Microsecond
	pollEvery = 5 * time.Millisecond
)

// Signal tells rank dst that this rank's stores so far are visible to it.
func (w *Window) Signal(dst int) error {
	if w.remoteOK(dst) {
		return w.remoteCall("signal", dst, func(ctx context.Context) error { return w.remote.Signal(ctx, dst) })
	}
	if err := w.checkPeer("signal", dst); err != nil {
		return err
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return fmt.Errorf("symm signal: %w", ErrClosed)
	}
	m := w.segs[dst].mem
	word64(m, hSignals+w.rank*lineBytes).Add(1)
	ring(m)
	return nil
}

// ring wakes the sleepers of the segment m.
func ring(m []byte) {
	word32(m, hBell).Add(1)
	if word32(m, hWaiters).Load() > 0 {
		futex.WakeAll(word32(m, hBell))
	}
}

// WaitSignal waits for one signal of rank src and consumes it. timeout <= 0
// is the window's timeout. A dead or closed src fails the wait within about
// pollEvery with a *transport.PeerError naming it.
func (w *Window) WaitSignal(ctx context.Context, src int, timeout time.Duration) error {
	if !w.remoteOK(src) {
		if err := w.checkPeer("wait_signal", src); err != nil {
			return err
		}
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return fmt.Errorf("symm wait_signal: %w", ErrClosed)
	}
	line := word64(w.segs[w.rank].mem, hSignals+src*lineBytes)
	consumed := &w.consumed[src]
	took := func() bool {
		for {
			c := consumed.Load()
			if line.Load() <= c {
				return false
			}
			if consumed.CompareAndSwap(c, c+1) {
				return true
			}
		}
	}
	err := w.wait(ctx, "wait_signal", timeout, []int{src}, took)
	if err != nil {
		return fmt.Errorf("rank %d waited for a signal from rank %d: %w", w.rank, src, err)
	}
	return nil
}

// Barrier returns once every rank of the window has entered it. Every rank
// must be on this host; timeout <= 0 is the window's timeout.
func (w *Window) Barrier(ctx context.Context, timeout time.Duration) error {
	if w.remote != nil && w.spansHosts() {
		// Every rank takes this branch alike: the Remote's barrier orders
		// the stores of every rank as the local one does.
		if timeout <= 0 {
			timeout = w.timeout
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := w.remote.Barrier(ctx); err != nil {
			return fmt.Errorf("symm barrier rank %d: %w", w.rank, err)
		}
		return nil
	}
	for r := range w.size {
		if err := w.checkPeer("barrier", r); err != nil {
			return err
		}
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return fmt.Errorf("symm barrier: %w", ErrClosed)
	}
	_, err := w.arrive(ctx, "barrier", hBarrier, timeout, false)
	return err
}

// arrive counts this rank at the barrier whose counters are the words at
// line of every segment, and waits for every peer to count as far (a peer
// is at most one barrier ahead: it waits for this rank's count); it returns
// this rank's count. poll first polls for up to collectiveSpin. The caller
// holds w.life for reading.
func (w *Window) arrive(ctx context.Context, op string, line int, timeout time.Duration, poll bool) (uint64, error) {
	n := word64(w.segs[w.rank].mem, line).Add(1)
	for r, s := range w.segs {
		if r != w.rank {
			ring(s.mem)
		}
	}
	for r, s := range w.segs {
		if r == w.rank {
			continue
		}
		count := word64(s.mem, line)
		done := func() bool { return count.Load() >= n }
		if poll {
			pollFor(done)
		}
		if err := w.wait(ctx, op, timeout, []int{r}, done); err != nil {
			return 0, fmt.Errorf("rank %d at %s %d waited for rank %d: %w", w.rank, op, n, r, err)
		}
	}
	return n, nil
}

// wait polls done until it holds, the peers die, timeout passes or ctx
// ends. The caller holds w.life for reading.
func (w *Window) wait(ctx context.Context, op string, timeout time.Duration, peers []int, done func() bool) error {
	if done() {
		return nil
	}
	if timeout <= 0 {
		timeout = w.timeout
	}
	start := time.Now()
	for time.Since(start) < spinFor {
		if done() {
			return nil
		}
	}
	m := w.segs[w.rank].mem
	bell, waiters := word32(m, hBell), word32(m, hWaiters)
	var y futex.Yielder
	for {
		b := bell.Load()
		waiters.Add(1)
		if done() {
			waiters.Add(^uint32(0))
			return nil
		}
		err := futex.Wait(bell, b, pollEvery)
		waiters.Add(^uint32(0))
		if err != nil {
			return err
		}
		if done() {
			return nil
		}
		for _, r := range peers {
			alive, err := w.alive(op, r)
			if err != nil && !done() {
				return err
			}
			if !alive && !done() {
				return w.peerGone(op, r)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("symm %s: %w", op, ctx.Err())
		}
		if waited := time.Since(start); waited >= timeout {
			return fmt.Errorf("symm %s: %w after %v", op, ErrTimeout, waited.Round(time.Millisecond))
		}
		y.Yield()
	}
}
