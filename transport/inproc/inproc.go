// Package inproc connects the ranks of a communicator inside one process,
// without sockets, so that algorithms can be tested quickly and under the
// race detector. A Send copies the data straight into the receiver's posted
// buffer, or into a buffered message when the receive is not posted yet.
package inproc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/match"
)

// errPeerClosed is the cause reported for a peer whose endpoint was closed.
var errPeerClosed = errors.New("peer endpoint closed")

// Endpoint is one rank of an in-process group.
type Endpoint struct {
	rank  int
	group []*Endpoint
	box   *match.Box

	closeOnce sync.Once
}

var (
	_ transport.Endpoint  = (*Endpoint)(nil)
	_ transport.AnySource = (*Endpoint)(nil)
)

// NewGroup returns size connected endpoints; element i has rank i.
func NewGroup(size int) []transport.Endpoint {
	group := make([]*Endpoint, size)
	for i := range group {
		group[i] = &Endpoint{rank: i, group: group, box: match.NewBox(i, size)}
	}
	out := make([]transport.Endpoint, size)
	for i, e := range group {
		out[i] = e
	}
	return out
}

// Rank implements transport.Endpoint.
func (e *Endpoint) Rank() int { return e.rank }

// Size implements transport.Endpoint.
func (e *Endpoint) Size() int { return len(e.group) }

// Send implements transport.Endpoint. It never blocks: the data is copied
// into the receiver before it returns.
func (e *Endpoint) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	if err := e.checkPeer(peer); err != nil {
		return fmt.Errorf("inproc send: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send to rank %d tag %#x: %w", peer, uint64(tag), err)
	}
	if e.box.Closed() {
		return transport.ErrClosed
	}
	in, err := e.group[peer].box.Arrive(e.rank, tag, len(data))
	if err != nil {
		if errors.Is(err, transport.ErrClosed) {
			err = errPeerClosed
		}
		return &transport.PeerError{Peer: peer, Op: "send", Err: err}
	}
	if len(data) > 0 {
		if dst := in.Acquire(0, len(data), nil); dst != nil {
			copy(dst, data)
		}
		in.Release(0, len(data), nil)
	}
	return nil
}

// Recv implements transport.Endpoint.
func (e *Endpoint) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	if err := e.checkPeer(peer); err != nil {
		return fmt.Errorf("inproc recv: %w", err)
	}
	return e.box.Recv(ctx, peer, tag, buf)
}

// Queued implements transport.Queues.
func (e *Endpoint) Queued(peer int, tag transport.Tag) (posted, arrived int) {
	return e.box.Queued(peer, tag)
}

// TryRecvAny implements transport.AnySource.
func (e *Endpoint) TryRecvAny(ctx context.Context, tag transport.Tag, buf []byte, accept func(peer int) bool) (int, bool, error) {
	return e.box.TryRecvAny(ctx, tag, buf, accept)
}

// Close implements transport.Endpoint. To the other ranks it looks like the
// death of this rank: their receives from it that have nothing buffered fail
// with a *transport.PeerError naming this rank, and so do their sends to it.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.box.Close()
		for _, p := range e.group {
			if p != e {
				p.box.FailPeer(e.rank, errPeerClosed)
			}
		}
	})
	return nil
}

// Kill simulates the crash of this rank; for tests. It is Close.
func (e *Endpoint) Kill() { _ = e.Close() }

func (e *Endpoint) checkPeer(peer int) error {
	if peer < 0 || peer >= len(e.group) {
		return fmt.Errorf("peer rank %d out of range [0, %d)", peer, len(e.group))
	}
	return nil
}
