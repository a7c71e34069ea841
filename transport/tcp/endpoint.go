package tcp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/match"
)

// Endpoint is one rank's TCP links to the other ranks of a communicator.
type Endpoint struct {
	rank, size int
	cfg        Config
	box        *match.Box
	// links[p] is nil at this rank's own index, for unlinked ranks, and,
	// with lazy links, until the link to p is made.
	links []atomic.Pointer[link]
	lazy  *lazyLinks // nil unless Config.Lazy

	closing   chan struct{}
	closeOnce sync.Once
	readers   sync.WaitGroup
}

var (
	_ transport.Endpoint  = (*Endpoint)(nil)
	_ transport.AnySource = (*Endpoint)(nil)
)

// newEndpoint wraps established connections (conns[peer][stream]) and starts
// one reader goroutine per connection.
func newEndpoint(rank, size int, cfg Config, conns [][]*net.TCPConn, maxFrame []int) *Endpoint {
	e := &Endpoint{
		rank:    rank,
		size:    size,
		cfg:     cfg,
		box:     match.NewBox(rank, size),
		links:   make([]atomic.Pointer[link], size),
		closing: make(chan struct{}),
	}
	for p := range conns {
		if conns[p] != nil {
			e.addLink(p, conns[p], maxFrame[p])
		}
	}
	return e
}

// addLink makes the link to peer over conns and starts its readers.
func (e *Endpoint) addLink(peer int, conns []*net.TCPConn, maxFrame int) {
	l := newLink(e, peer, conns, min(e.cfg.MaxFrameBytes, maxFrame))
	e.links[peer].Store(l)
	for _, s := range l.streams {
		e.readers.Go(func() { l.readLoop(s) })
	}
}

// Rank implements transport.Endpoint.
func (e *Endpoint) Rank() int { return e.rank }

// Size implements transport.Endpoint.
func (e *Endpoint) Size() int { return e.size }

// Send implements transport.Endpoint. Small messages are written by the
// calling goroutine in one writev; large ones are cut into frames and, with
// several streams per peer, striped across them. If ctx ends while a frame is
// half written, the link to peer is closed (the stream cannot be resumed).
func (e *Endpoint) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	if err := e.checkPeer(peer); err != nil {
		return fmt.Errorf("tcp send: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send to rank %d tag %#x: %w", peer, uint64(tag), err)
	}
	if e.isClosing() {
		return transport.ErrClosed
	}
	if peer == e.rank {
		return e.sendSelf(tag, data)
	}
	l := e.links[peer].Load()
	if l == nil { // a lazy link not made yet (checkPeer)
		var err error
		if l, err = e.lazy.await(ctx, peer); err != nil {
			return fmt.Errorf("send to rank %d tag %#x: %w", peer, uint64(tag), err)
		}
	}
	return l.send(ctx, tag, data)
}

// sendSelf delivers a message to this endpoint's own receives.
func (e *Endpoint) sendSelf(tag transport.Tag, data []byte) error {
	in, err := e.box.Arrive(e.rank, tag, len(data))
	if err != nil {
		return fmt.Errorf("send to self: %w", err)
	}
	if len(data) > 0 {
		if dst := in.Acquire(0, len(data), nil); dst != nil {
			copy(dst, data)
		}
		in.Release(0, len(data), nil)
	}
	return nil
}

// Recv implements transport.Endpoint. When the receive is posted before the
// message arrives, the reader goroutine reads the body straight into buf.
func (e *Endpoint) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	if err := e.checkPeer(peer); err != nil {
		return fmt.Errorf("tcp recv: %w", err)
	}
	if peer != e.rank && e.lazy != nil && e.links[peer].Load() == nil {
		// A receive is a first use too: with the link up, the peer's
		// death fails it.
		e.lazy.start(peer)
	}
	return e.box.Recv(ctx, peer, tag, buf)
}

// Queued implements transport.Queues.
func (e *Endpoint) Queued(peer int, tag transport.Tag) (posted, arrived int) {
	return e.box.Queued(peer, tag)
}

// TryRecvAny implements transport.AnySource.
func (e *Endpoint) TryRecvAny(ctx context.Context, tag transport.Tag, buf []byte, accept func(peer int) bool) (int, bool, error) {
	if e.lazy != nil {
		// Every peer a wildcard receive accepts is used by it.
		for p := range e.links {
			if p != e.rank && e.links[p].Load() == nil && e.lazy.s.linked(p) && accept(p) {
				e.lazy.start(p)
			}
		}
	}
	return e.box.TryRecvAny(ctx, tag, buf, accept)
}

// byeTimeout bounds the goodbye Close sends to each peer.
const byeTimeout = 100 * time.Millisecond

// Close implements transport.Endpoint: it says goodbye to the peers (so
// their errors read "peer closed its endpoint" rather than a reset), closes
// every connection, fails
// pending operations with transport.ErrClosed, and returns once every reader
// goroutine has exited.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		close(e.closing)
		if e.lazy != nil {
			e.lazy.stop() // no link is made after this
		}
		e.box.Close()
		deadline := time.Now().Add(byeTimeout)
		for i := range e.links {
			if l := e.links[i].Load(); l != nil && !l.isDead() {
				for _, s := range l.streams {
					s.sayBye(deadline)
				}
			}
		}
		for i := range e.links {
			if l := e.links[i].Load(); l != nil {
				l.fail(transport.ErrClosed)
			}
		}
		e.readers.Wait()
	})
	return nil
}

func (e *Endpoint) isClosing() bool {
	select {
	case <-e.closing:
		return true
	default:
		return false
	}
}

func (e *Endpoint) checkPeer(peer int) error {
	if peer < 0 || peer >= e.size {
		return fmt.Errorf("peer rank %d out of range [0, %d)", peer, e.size)
	}
	if peer != e.rank && e.links[peer].Load() == nil && (e.lazy == nil || !e.lazy.s.linked(peer)) {
		return fmt.Errorf("rank %d has no TCP link to rank %d (Config.Unlinked)", e.rank, peer)
	}
	return nil
}

// Linked reports whether this endpoint has a link to peer now (made and
// not failed). With lazy links, a peer not yet used has none.
func (e *Endpoint) Linked(peer int) bool {
	if peer < 0 || peer >= e.size || peer == e.rank {
		return false
	}
	l := e.links[peer].Load()
	return l != nil && !l.isDead()
}

// LinkReady is closed once the link to peer is made or cannot be; with
// links made in Connect (or for a peer without one), it is closed already.
func (e *Endpoint) LinkReady(peer int) <-chan struct{} {
	if e.lazy == nil || peer < 0 || peer >= e.size || peer == e.rank || !e.lazy.s.linked(peer) {
		return closedChan
	}
	return e.lazy.ready[peer]
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Links counts the links made so far, failed ones included.
func (e *Endpoint) Links() int {
	n := 0
	for i := range e.links {
		if e.links[i].Load() != nil {
			n++
		}
	}
	return n
}
