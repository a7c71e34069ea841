package symm

import (
	"context"
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

// Collective channels: the collectives that read symmetric memory in place
// (collectives/inplace) order their phases with barriers of their own, one
// counter per channel, apart from Barrier's, which the application calls in
// an order of its own. A communicator gives each of its streams a channel:
// the ops of one stream run in the same order on every rank, those of
// different streams need not.
//
// Enter publishes a description of the op (its sequence number, offsets,
// size) in this rank's line, then counts; once every local rank has
// counted, it compares their descriptions. A peer cannot overwrite its
// description before this rank has read it: it would first have to pass
// the Leave that follows, which waits for this rank.

// Channels is the number of collective channels of a window.
const Channels = 4

// DescWords is the length of a collective's description.
const DescWords = 5

// Enter is the entry barrier of a collective on channel ch: it returns once
// every rank of the window has entered, with ErrMismatch when one of them
// described its collective differently. Every rank must be on this host;
// timeout <= 0 is the window's timeout.
func (w *Window) Enter(ctx context.Context, ch int, desc [DescWords]uint64, timeout time.Duration) error {
	line, err := w.channel("enter", ch)
	if err != nil {
		return err
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return fmt.Errorf("symm enter: %w", ErrClosed)
	}
	own := w.segs[w.rank].mem
	for i, v := range desc {
		word64(own, line+8+8*i).Store(v)
	}
	n, err := w.arrive(ctx, "collective entry", line, timeout, true)
	if err != nil {
		return err
	}
	for r, s := range w.segs {
		if r == w.rank {
			continue
		}
		var theirs [DescWords]uint64
		for i := range theirs {
			theirs[i] = word64(s.mem, line+8+8*i).Load()
		}
		if theirs != desc {
			return fmt.Errorf("rank %d in collective %d of channel %d: %w: rank %d describes it as %v, this rank as %v", w.rank, n, ch, ErrMismatch, r, theirs, desc)
		}
	}
	return nil
}

// Leave is the exit barrier of the collective that Enter began on ch.
func (w *Window) Leave(ctx context.Context, ch int, timeout time.Duration) error {
	line, err := w.channel("leave", ch)
	if err != nil {
		return err
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return fmt.Errorf("symm leave: %w", ErrClosed)
	}
	_, err = w.arrive(ctx, "collective exit", line, timeout, true)
	return err
}

// channel checks ch and that every rank is local, and returns the offset
// of ch's line.
func (w *Window) channel(op string, ch int) (int, error) {
	if ch < 0 || ch >= Channels {
		return 0, fmt.Errorf("symm %s: %w: channel %d out of range [0, %d)", op, ErrInvalid, ch, Channels)
	}
	for r := range w.size {
		if err := w.checkPeer(op, r); err != nil {
			return 0, err
		}
	}
	return hChannel + ch*lineBytes, nil
}

// collectiveSpin is how long a collective barrier polls, yielding the
// processor between polls, before it sleeps on the bell: a peer of a
// collective is usually a few microseconds to a millisecond behind (still
// copying its piece), and a futex sleep and wake-up costs tens of
// microseconds, as much as a whole in-place op of a few hundred KiB.
const collectiveSpin = time.Millisecond

// pollFor polls done for up to collectiveSpin.
func pollFor(done func() bool) {
	var y futex.Yielder
	start := time.Now()
	for !done() && time.Since(start) < collectiveSpin {
		for range 64 {
			if done() {
				return
			}
		}
		y.Yield()
	}
}
