package symm

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/transport"
)

// Remote carries the one-sided operations on ranks of other hosts, whose
// regions this process cannot map (pgbackend carries them over a
// communicator's links, symm_remote.go there). Each call returns once the
// operation is done at the target: a Put's data is in the target's region,
// a Signal is counted there.
type Remote interface {
	Put(ctx context.Context, rank, off int, data []byte) error
	Get(ctx context.Context, rank, off int, buf []byte) error
	Signal(ctx context.Context, rank int) error
	// Barrier returns once every rank of the window has entered it.
	Barrier(ctx context.Context) error
	// Alive is nil while rank lives, else why it does not.
	Alive(rank int) error
}

// remoteOK says whether an operation may name rank through the window's
// Remote: a rank of another host, and a Remote to reach it.
func (w *Window) remoteOK(rank int) bool {
	return w.remote != nil && rank >= 0 && rank < w.size && w.segs[rank] == nil
}

// spansHosts says whether some rank of the window is on another host.
func (w *Window) spansHosts() bool {
	for _, s := range w.segs {
		if s == nil {
			return true
		}
	}
	return false
}

// remoteCall runs f, an operation on a rank of another host, within the
// window's timeout.
func (w *Window) remoteCall(op string, rank int, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	if err := f(ctx); err != nil {
		return fmt.Errorf("symm %s to rank %d on host %q: %w", op, rank, w.hosts[rank], err)
	}
	return nil
}

// Deliver counts a signal of rank src that arrived through the Remote: a
// WaitSignal(src) consumes it as a local one.
func (w *Window) Deliver(src int) error {
	if src < 0 || src >= w.size {
		return fmt.Errorf("symm deliver: %w: rank %d out of range for %d ranks", ErrInvalid, src, w.size)
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return fmt.Errorf("symm deliver: %w", ErrClosed)
	}
	m := w.segs[w.rank].mem
	word64(m, hSignals+src*lineBytes).Add(1)
	ring(m)
	return nil
}

// alive says whether peer r lives: its segment's lock on this host, the
// Remote's word for another.
func (w *Window) alive(op string, r int) (bool, error) {
	if s := w.segs[r]; s != nil {
		return s.alive()
	}
	if w.remote == nil {
		return true, nil
	}
	if err := w.remote.Alive(r); err != nil {
		return false, &transport.PeerError{Peer: r, Op: "symm " + op, Err: err}
	}
	return true, nil
}
