package arena

import (
	"context"
	"fmt"
)

// Begin starts an operation with the caller's sequence number (used in
// error messages only). It fails when the arena is closed or broken; on
// success the caller must call End.
func (a *Arena) Begin(seq uint64) error {
	a.op.Lock()
	if failed := a.failed.Load(); failed != nil {
		a.op.Unlock()
		return fmt.Errorf("op seq %d: %w: %w", seq, ErrBroken, *failed)
	}
	a.life.RLock()
	if a.closed.Load() {
		a.life.RUnlock()
		a.op.Unlock()
		return ErrClosed
	}
	return nil
}

// End finishes the operation started by Begin. A non-nil err means it
// stopped part-way: the arena then refuses further operations, and the
// peers waiting for this rank stop with err (Fail).
func (a *Arena) End(err error) {
	if err != nil {
		a.fail(err)
	}
	a.life.RUnlock()
	a.op.Unlock()
}

// Next returns the next epoch (the first is 1). Only between Begin and End.
func (a *Arena) Next() uint64 {
	a.epoch++
	return a.epoch
}

// Inline returns the inline slot payload of local rank j for epoch e
// (InlineBytes long). Write only the own slot, before PostInline(e).
func (a *Arena) Inline(j int, e uint64) []byte { return a.inline[e&1][j] }

// Half returns the data half of local rank j for epoch e (HalfBytes long).
// Write only the own half, before Post(e).
func (a *Arena) Half(j int, e uint64) []byte { return a.halves[e&1][j] }

// Post announces that this rank's buffers of epoch e are written.
func (a *Arena) Post(e uint64) {
	me := a.index
	a.posted[me].Store(e)
	if a.waiters[me].Load() != 0 {
		a.noteCPU(e) // for the sleepers this wakes (placement.go)
		ring(a.bells[me])
	}
}

// PostInline is Post for an epoch whose data is in the inline slot: it
// stores the slot's flag (in the same cache line as the first payload
// bytes) before posting.
func (a *Arena) PostInline(e uint64) {
	a.flags[e&1][a.index].Store(e)
	a.Post(e)
}

// WaitAll waits until every peer has posted epoch e.
func (a *Arena) WaitAll(ctx context.Context, e uint64) error {
	for j, w := range a.posted {
		if j != a.index && w.Load() < e {
			if err := a.wait(ctx, j, w, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// Wait waits until local rank j has posted epoch e.
func (a *Arena) Wait(ctx context.Context, j int, e uint64) error {
	if w := a.posted[j]; w.Load() < e {
		return a.wait(ctx, j, w, e)
	}
	return nil
}

// WaitAllInline waits until every peer's inline slot holds epoch e (posted
// with PostInline). Polling the slot's flag brings the first payload bytes
// along in the same cache line.
func (a *Arena) WaitAllInline(ctx context.Context, e uint64) error {
	for j, w := range a.flags[e&1] {
		if j != a.index && w.Load() < e {
			if err := a.wait(ctx, j, w, e); err != nil {
				return err
			}
		}
	}
	return nil
}
