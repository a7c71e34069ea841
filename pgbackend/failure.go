package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Failure handling. A communicator fails as a whole, as NCCL's does after an
// asynchronous error: when a peer dies or leaves without destroying its
// communicator (monitor.go notices within milliseconds), when a collective
// times out or fails part-way, or when a peer reports such a failure of its
// own. Failing cancels every running op at once and makes every later op
// fail before it starts, each with an error naming the op and the cause
// (the dead rank, or the op that timed out and the ranks it waited for).
// The flight recorder is dumped once, and the peers are told, so that a
// rank that was merely slow fails fast instead of waiting for its timeout.
// Point-to-point errors and argument errors (including collective
// mismatches, which every rank sees alike) leave the communicator usable.

// ErrCommFailed wraps the errors of ops refused because the communicator
// failed earlier.
var ErrCommFailed = errors.New("communicator failed")

// PeerFailure is the cause of a communicator's failure that lies with a
// peer: its process is gone (Err says how the link ended), or it reported a
// failure of its own (Reported).
type PeerFailure struct {
	Rank     int
	Reported string
	Err      error
}

func (e *PeerFailure) Error() string {
	if e.Reported != "" {
		return fmt.Sprintf("peer rank %d failed: %s", e.Rank, e.Reported)
	}
	return fmt.Sprintf("peer rank %d is gone (%v)", e.Rank, e.Err)
}

func (e *PeerFailure) Unwrap() error { return e.Err }

// reliability is the failure-handling state of a communicator, embedded in
// it: the flight recorder, the peer monitor and the failure itself (the
// cause of the communicator context's cancellation).
type reliability struct {
	// clock times the ops: the streams take their readings (issued,
	// started, ended) and the flight recorder and deadlines share them.
	clock   streams.Clock
	flight  *flightRecorder
	mon     *monitor   // nil for communicators made without Connect
	lazy    lazyLinker // the TCP endpoint when its links are made on first use, else nil
	job     string     // the rendezvous job ID, for trace file names
	created time.Time
	dumped  atomic.Bool // the flight recorder was dumped on a failure
	failMu  sync.Mutex  // makes "not failed yet, so fail now" atomic
}

func newReliability(cfg Config) reliability {
	clock := streams.NewClock()
	return reliability{clock: clock, flight: newFlightRecorder(cfg.TraceSize, clock), created: time.Now()}
}

// failure returns why the communicator failed or was aborted, or nil.
func (c *Communicator) failure() error {
	if c.ctx.Err() == nil {
		return nil
	}
	return context.Cause(c.ctx)
}

// notedError adds the flight recorder's file to an error's message.
type notedError struct {
	err  error
	note string
}

func (e *notedError) Error() string { return e.err.Error() + e.note }
func (e *notedError) Unwrap() error { return e.err }

// fail makes cause the communicator's failure unless it failed already:
// it dumps the flight recorder, cancels every running op and, when notify,
// tells the peers why. It returns cause with the dump's path in its
// message, or nil when another failure came first.
func (c *Communicator) fail(cause error, notify bool) error {
	c.failMu.Lock()
	if c.ctx.Err() != nil {
		c.failMu.Unlock()
		return nil
	}
	c.stopLane()
	c.stopSplitLanes()
	reason := cause.Error()
	if note := c.autoDump(cause.Error()); note != "" {
		cause = &notedError{err: cause, note: note}
	}
	c.cancel(cause)
	c.failMu.Unlock()
	if notify && c.mon != nil {
		// Before the op's error returns (and the caller perhaps exits): the
		// notice must reach the peers ahead of the link's goodbye.
		c.mon.notifyAll(reason)
	}
	return cause
}

// runOp runs one recorded op, started at stamps.Started, with the op's
// deadline and turns its error into the one the caller sees. It sets
// stamps.Ended: the flight recorder needs the op's end before it returns.
func (c *Communicator) runOp(o *commOp, stamps *streams.Stamps) (err error) {
	op, start := o.desc, stamps.Started
	c.flight.start(o.id, op, start)
	if cause := c.failure(); cause != nil {
		err := failedError(op.name(c.rank, c.size), cause, nil)
		stamps.Ended = c.clock.Now()
		c.flight.end(o.id, op, err, stamps.Ended)
		return c.withGlobalRanks(err)
	}
	var traffic *trafficCounters
	if !o.isP2P() {
		traffic = c.stats.kind(op.Kind)
	}
	o.ctx.init(c.ctx, start.Add(c.cfg.Timeout), traffic)
	defer o.ctx.release()
	stamps.Ended, err = c.concludeOp(o.id, op, start, &o.ctx, o.run())
	return err
}

// concludeOp turns the error an op ran into (nil: it succeeded) into the
// one its caller sees, records the op's end in the flight recorder and
// returns when that was. A collective that failed in a way that leaves the
// ranks out of step fails the communicator. ctx is the op's context.
func (c *Communicator) concludeOp(id uint64, op opDesc, start time.Time, ctx *opContext, err error) (time.Time, error) {
	if err != nil && c.ctx.Err() == nil && isLinkError(err) {
		// A broken link is often the echo of an earlier failure: the peer
		// failed because a third rank died, told us, and left. Give the
		// monitor a moment to deliver that cause, which names the culprit.
		t := time.NewTimer(linkSettle)
		select {
		case <-c.ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	switch {
	case err == nil:
		ended := c.clock.Now()
		c.flight.end(id, op, nil, ended)
		return ended, nil
	case c.ctx.Err() != nil:
		err = failedError(op.name(c.rank, c.size), context.Cause(c.ctx), err)
		ended := c.clock.Now()
		c.flight.end(id, op, err, ended)
		return ended, c.withGlobalRanks(err)
	case ctx.Err() == context.DeadlineExceeded:
		ran := c.clock.Now().Sub(start)
		err = fmt.Errorf("%s: %w after %v (op timeout %v)%s: %w", op.name(c.rank, c.size), ErrTimeout,
			ran.Round(time.Millisecond), c.cfg.Timeout, c.stragglers(op), err)
	default:
		err = fmt.Errorf("%s: %w", op.name(c.rank, c.size), err)
	}
	ended := c.clock.Now()
	c.flight.end(id, op, err, ended)
	if !op.isP2P() && !keepsCommUsable(err) {
		if noted := c.fail(err, true); noted != nil {
			err = noted
		}
	}
	return ended, c.withGlobalRanks(err)
}

// linkSettle is how long an op whose link to a peer broke waits for the
// communicator's failure cause before reporting its own error.
const linkSettle = 200 * time.Millisecond

// isLinkError reports whether err is a peer's link or process failing.
func isLinkError(err error) bool {
	var peer *transport.PeerError
	var arenaPeer *arena.PeerError
	return errors.As(err, &peer) || errors.As(err, &arenaPeer)
}

// keepsCommUsable reports errors after which the ranks are still in step:
// arguments refused before the op ran, and mismatches seen by every rank.
func keepsCommUsable(err error) bool {
	return errors.Is(err, ErrInvalidArgument) || errors.Is(err, collectives.ErrInvalidArgument) || errors.Is(err, ErrMismatch)
}

// failedError is the error of an op that the communicator's failure (or
// abort) refused or cut short; opErr is what the op itself saw, if it ran.
func failedError(name string, cause, opErr error) error {
	if errors.Is(cause, ErrAborted) {
		if opErr == nil {
			opErr = errors.New("not run")
		}
		return fmt.Errorf("%s: %w: %v", name, ErrAborted, opErr)
	}
	if opErr == nil {
		return fmt.Errorf("%s: not run: %w: %w", name, ErrCommFailed, cause)
	}
	var peer *transport.PeerError
	if errors.Is(opErr, context.Canceled) || !errors.As(opErr, &peer) {
		// The op only saw the cancellation: the cause says it all.
		return fmt.Errorf("%s: %w", name, cause)
	}
	return fmt.Errorf("%s: %w (the op saw: %v)", name, cause, opErr)
}
