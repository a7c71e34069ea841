package arena

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// pollsPerCheck is how many polls of a flag the spinning phase makes between
// looks at the clock, the context and Close.
const pollsPerCheck = 64

// wait blocks until w (a word of local rank j's segment) reaches e. It
// spins for the spin budget (see Config.SpinTime), notes where it runs
// (placement.go), then yields the
// processor between polls until cfg.SpinTime+cfg.YieldTime have passed,
// then sleeps on j's bell, counted in j's waiters so that j's Post wakes
// it. It fails when ctx ends, the arena is closed, or j is gone (checked
// every cfg.LivenessInterval once spinning is over).
// Waited is the time this rank has spent waiting for its peers in the
// arena's Go waits, past their first polls: what an op's time in the arena
// minus it leaves is the rank's own work (copies, reductions).
func (a *Arena) Waited() time.Duration { return time.Duration(a.waited.Load()) }

func (a *Arena) wait(ctx context.Context, j int, w *atomic.Uint64, e uint64) error {
	// Most waits of a small op end within the first polls: read the clock
	// only after them.
	for range pollsPerCheck {
		if w.Load() >= e {
			return nil
		}
	}
	start := time.Now()
	defer func() { a.waited.Add(int64(time.Since(start))) }()
	spinEnd := a.spin
	yieldEnd := a.cfg.SpinTime + a.cfg.YieldTime
	for {
		for range pollsPerCheck {
			if w.Load() >= e {
				return nil
			}
		}
		if err := a.interrupted(ctx, j, w, e); err != nil {
			return err
		}
		if time.Since(start) >= spinEnd {
			break
		}
	}
	a.notePlace(j, e)
	slept := -1 // the CPU of the last sleep below (-1: none)
	nextLiveness := time.Duration(0)
	var y yielder
	var stopWake func() bool
	var rung chan struct{} // closed once the wake-up below has rung
	defer func() {
		// A wake-up already started must finish before the wait returns:
		// the bell lies in shared memory that Close may unmap right after.
		if stopWake != nil && !stopWake() {
			<-rung
		}
	}()
	bell := a.bells[j]
	for {
		if w.Load() >= e {
			if slept >= 0 {
				a.noteWake(j, e, slept)
			}
			return nil
		}
		if err := a.failedBeforePosting(j, w, e); err != nil {
			return err
		}
		elapsed := time.Since(start)
		if elapsed >= nextLiveness {
			if err := a.checkPeer(j, w, e); err != nil {
				return err
			}
			nextLiveness = elapsed + a.cfg.LivenessInterval
		}
		if elapsed < yieldEnd {
			if err := a.interrupted(ctx, j, w, e); err != nil {
				return err
			}
			y.Yield()
			continue
		}
		if stopWake == nil {
			// Cancellation must end the sleep, not only the deadline.
			rung = make(chan struct{})
			stopWake = context.AfterFunc(ctx, func() {
				ring(bell)
				close(rung)
			})
		}
		// Order matters (see Post and Close): announce, read the bell, then
		// re-check everything that could have changed before sleeping.
		a.waiters[j].Add(1)
		b := bell.Load()
		if err := a.interrupted(ctx, j, w, e); err != nil {
			a.waiters[j].Add(^uint32(0))
			return err
		}
		if w.Load() >= e {
			a.waiters[j].Add(^uint32(0))
			return nil
		}
		if err := a.failedBeforePosting(j, w, e); err != nil {
			a.waiters[j].Add(^uint32(0))
			return err
		}
		d := min(a.cfg.LivenessInterval, nextLiveness-elapsed)
		if dl, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(dl))
		}
		if cpu, ok := currentCPU(); ok {
			slept = cpu
		}
		err := sleepOn(bell, b, max(d, time.Microsecond))
		a.waiters[j].Add(^uint32(0))
		if err != nil {
			return fmt.Errorf("wait for peer rank %d at epoch %d: %w", a.ranks[j], e, err)
		}
	}
}

// interrupted returns why a wait for local rank j's epoch e (shown by w)
// must stop early: Close or the context. At the context's deadline it
// first gives j a grace to publish a failure of its own (graceFailure),
// which the error then carries.
// It asks ctx.Err rather than ctx.Done: an op's context makes its deadline
// timer only once something needs Done (pgbackend's opContext), and arming
// a runtime timer wakes the network poller's thread; only a wait that goes
// to sleep needs Done.
func (a *Arena) interrupted(ctx context.Context, j int, w *atomic.Uint64, e uint64) error {
	if a.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		if failure := a.graceFailure(ctx, j, w, e); failure != nil {
			return fmt.Errorf("wait for peer rank %d at epoch %d: %w; meanwhile %w", a.ranks[j], e, err, failure)
		}
		return fmt.Errorf("wait for peer rank %d at epoch %d: %w", a.ranks[j], e, err)
	}
	return nil
}

// Alive reports, for another arena's Config.Liveness, whether local rank j
// still has this arena open. It fails once this arena is closed.
func (a *Arena) Alive(j int) (bool, error) {
	a.life.RLock()
	defer a.life.RUnlock()
	if a.closed.Load() {
		return false, ErrClosed
	}
	if j == a.index {
		return true, nil
	}
	return a.peerAlive(j)
}

// peerAlive reports whether local rank j still has the arena open.
func (a *Arena) peerAlive(j int) (bool, error) {
	if a.cfg.Liveness != nil {
		return a.cfg.Liveness(j)
	}
	return a.segs[j].alive()
}

// checkPeer fails when local rank j is gone and has not reached e.
func (a *Arena) checkPeer(j int, w *atomic.Uint64, e uint64) error {
	alive, err := a.peerAlive(j)
	if err != nil {
		return fmt.Errorf("wait for peer rank %d: %w", a.ranks[j], err)
	}
	if alive || w.Load() >= e {
		return nil
	}
	return fmt.Errorf("wait at epoch %d: %w", e, &PeerError{Rank: a.ranks[j], Pid: a.segs[j].pid(), Err: ErrPeerGone})
}

// ring bumps a bell and wakes its sleepers.
func ring(bell *atomic.Uint32) {
	bell.Add(1)
	wakeAll(bell)
}
