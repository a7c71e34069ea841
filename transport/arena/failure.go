package arena

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// A rank that fails an operation publishes why in its segment (the failure
// record: the failed word and a message). Peers waiting for it stop at once
// with its message, rather than at their own timeout with one that can
// name only this rank: in a hierarchical collective the rank may have
// failed on a rank of another host, which its message names. While it
// works across hosts it says so (the away word), so that a peer timing out
// on it at the same moment waits briefly for that message.

// BeginAway marks this rank as working outside the arena (a hierarchical
// op's exchange across hosts) until the matching EndAway; calls may nest.
// A peer whose wait for this rank reaches its deadline meanwhile gives it
// Config.FailureGrace to fail the op itself (Fail): the ranks of an op
// share its timeout, and this rank's error names whom it waited for. A
// peer waiting for a rank that is not away reports its deadline at once.
func (a *Arena) BeginAway() { a.addAway(1) }

// EndAway undoes one BeginAway.
func (a *Arena) EndAway() { a.addAway(^uint64(0)) }

func (a *Arena) addAway(d uint64) {
	a.life.RLock()
	defer a.life.RUnlock()
	if !a.closed.Load() {
		a.aways[a.index].Add(d)
	}
}

// Fail marks the arena unusable because of err, as a failed operation does
// (End), and publishes err to the peers. It is for a caller whose work
// failed outside the arena, between arena operations (a hierarchical
// collective's exchange across hosts), while host peers may wait for its
// next post. Only the first failure is kept.
func (a *Arena) Fail(err error) {
	if err == nil {
		return
	}
	a.life.RLock()
	defer a.life.RUnlock()
	if a.closed.Load() {
		return
	}
	a.fail(err)
}

// fail is Fail for a caller that holds life.
func (a *Arena) fail(err error) {
	if !a.failed.CompareAndSwap(nil, &err) {
		return
	}
	m := a.segs[a.index].mem
	msg := err.Error()
	if len(msg) > failMsgBytes {
		msg = msg[:failMsgBytes]
	}
	copy(m[hFailMsg:hFailMsg+failMsgBytes], msg)
	word32(m, hFailLen).Store(uint32(len(msg)))
	a.fails[a.index].Store(1) // last: the message is complete
	ring(a.bells[a.index])    // sleepers waiting for this rank look again
}

// peerFailure returns local rank j's published failure, or nil.
func (a *Arena) peerFailure(j int) error {
	if a.fails[j].Load() == 0 {
		return nil
	}
	m := a.segs[j].mem
	n := min(int(word32(m, hFailLen).Load()), failMsgBytes)
	msg := strings.ToValidUTF8(string(m[hFailMsg:hFailMsg+n]), "?")
	return &PeerError{Rank: a.ranks[j], Pid: a.segs[j].pid(), Err: fmt.Errorf("%w: %s", ErrPeerFailed, msg)}
}

// failedBeforePosting returns local rank j's failure when j published one
// and has not reached epoch e (w is the word that shows it).
func (a *Arena) failedBeforePosting(j int, w *atomic.Uint64, e uint64) error {
	if a.fails[j].Load() == 0 || w.Load() >= e {
		return nil
	}
	return fmt.Errorf("wait at epoch %d: %w", e, a.peerFailure(j))
}

// graceFailure is called when a wait for local rank j's epoch e has
// reached its context's deadline: when j is away (BeginAway), it watches j for
// up to cfg.FailureGrace and returns j's failure if j publishes one
// meanwhile, or nil (then the deadline stands). It stops early when j
// dies, posts e, or the arena closes.
func (a *Arena) graceFailure(ctx context.Context, j int, w *atomic.Uint64, e uint64) error {
	if a.cfg.FailureGrace <= 0 || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	if err := a.failedBeforePosting(j, w, e); err != nil || a.aways[j].Load() == 0 {
		return err
	}
	const poll = time.Millisecond
	for end := time.Now().Add(a.cfg.FailureGrace); time.Now().Before(end); time.Sleep(poll) {
		if err := a.failedBeforePosting(j, w, e); err != nil {
			return err
		}
		if a.closed.Load() || w.Load() >= e {
			return nil
		}
		if alive, err := a.peerAlive(j); err != nil || !alive {
			return nil
		}
	}
	return nil
}
