package pgbackend

import (
	"context"
	"fmt"
	"sync"

	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport"
)

// p2pQueues runs point-to-point ops. Sends to one peer run in order on one
// stream and receives from one peer on another, so that messages with the
// same tag match in posting order; neither waits behind collectives or
// behind the other direction, so any interleaving of isend/irecv (as
// batch_isend_irecv issues them) is deadlock-free.
type p2pQueues struct {
	c     *Communicator
	mu    sync.Mutex
	sends map[int]*streams.Stream
	recvs map[int]*streams.Stream // by peer; anyPeer: receives from any rank
}

func newP2PQueues(c *Communicator) *p2pQueues {
	return &p2pQueues{c: c, sends: map[int]*streams.Stream{}, recvs: map[int]*streams.Stream{}}
}

func (q *p2pQueues) stream(m map[int]*streams.Stream, dir string, peer int) *streams.Stream {
	q.mu.Lock()
	defer q.mu.Unlock()
	s, ok := m[peer]
	if !ok {
		// Timed by the communicator's clock, as the collectives are.
		name := fmt.Sprintf("rank%d/%s%d", q.c.rank, dir, peer)
		if peer == anyPeer {
			name = fmt.Sprintf("rank%d/%s-any", q.c.rank, dir)
		}
		s = streams.NewScheduler(name, streams.Config{Clock: q.c.clock}).NewStream(name, 0, 0)
		m[peer] = s
	}
	return s
}

func (q *p2pQueues) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range []map[int]*streams.Stream{q.sends, q.recvs} {
		for _, s := range m {
			s.Close()
		}
	}
}

// p2pTag keeps user tags apart from collective sequence numbers.
func p2pTag(tag uint32) transport.Tag { return transport.P2PTagBit | transport.Tag(tag) }

// Send sends buf to peer under tag.
func (c *Communicator) Send(buf []byte, peer int, tag uint32) (*streams.Work, error) {
	if err := c.checkPeer("send", peer); err != nil {
		return nil, err
	}
	o, issued := c.newCommOp(p2pOp("send", len(buf), peer, tag), func(ctx context.Context, tag transport.Tag) error {
		return c.ep.Send(ctx, peer, tag, buf)
	})
	return c.p2p.stream(c.p2p.sends, "send", peer).SubmitOp(o, issued), nil
}

// Recv receives exactly len(buf) bytes from peer under tag.
func (c *Communicator) Recv(buf []byte, peer int, tag uint32) (*streams.Work, error) {
	if err := c.checkPeer("recv", peer); err != nil {
		return nil, err
	}
	o, issued := c.newCommOp(p2pOp("recv", len(buf), peer, tag), func(ctx context.Context, tag transport.Tag) error {
		return c.ep.Recv(ctx, peer, tag, buf)
	})
	return c.p2p.stream(c.p2p.recvs, "recv", peer).SubmitOp(o, issued), nil
}

// RecvAny receives exactly len(buf) bytes under tag from whichever rank
// sends first (torch's recv without src), and calls source with that rank
// before the work completes. Receives from any rank run in order on a
// stream of their own; a receive that names its peer may take a message
// that an earlier RecvAny could also have taken.
func (c *Communicator) RecvAny(buf []byte, tag uint32, source func(rank int)) (*streams.Work, error) {
	if err := c.live(); err != nil {
		return nil, err
	}
	o, issued := c.newCommOp(p2pOp("recv", len(buf), anyPeer, tag), func(ctx context.Context, tag transport.Tag) error {
		peer, err := transport.RecvAny(ctx, c.ep, tag, buf, func(int) bool { return true })
		if err != nil {
			return err
		}
		source(peer)
		return nil
	})
	return c.p2p.stream(c.p2p.recvs, "recv", anyPeer).SubmitOp(o, issued), nil
}

func (c *Communicator) checkPeer(op string, peer int) error {
	if err := c.live(); err != nil {
		return err
	}
	if peer < 0 || peer >= c.size {
		return c.invalid(op, "peer %d out of range [0, %d)", peer, c.size)
	}
	if peer == c.rank {
		return c.invalid(op, "peer %d is this rank itself", peer)
	}
	return nil
}
