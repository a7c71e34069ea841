// Package match pairs incoming messages with posted receives, the part every
// transport shares: FIFO per (peer, tag), unexpected messages buffered until a
// Recv claims them, size checks, cancellation, and failure of one peer or of
// the whole endpoint.
//
// A transport calls Arrive when a message from a peer starts to arrive, then
// lands its bytes through the returned Incoming (Acquire/Release), possibly in
// several pieces and from several goroutines. When a Recv is already posted,
// the bytes land directly in its buffer; otherwise in storage owned by the
// Incoming, copied out when a Recv claims it.
package match

import (
	"context"
	"fmt"
	"sync"

	"github.com/hccl-go/hccl-go/transport"
)

// Interrupter stops a goroutine that is landing bytes into an Incoming, so
// that a Recv giving up (timeout, failure) can return without anyone writing
// into its buffer afterwards. A writer that is interrupted must Release what
// it landed and Acquire again for the rest.
type Interrupter interface {
	Interrupt()
}

type key struct {
	peer int
	tag  transport.Tag
}

// queue holds, for one (peer, tag), either messages nobody asked for yet or
// receives nobody answered yet (never both at once).
type queue struct {
	arrived []*Incoming
	posted  []*request
}

// Box is the receive side of one endpoint. All methods are safe for
// concurrent use.
type Box struct {
	rank, size int

	mu      sync.Mutex
	idle    *sync.Cond // signalled when a detached Incoming loses its last writer
	queues  map[key]*queue
	landing map[*Incoming]struct{} // messages whose bytes are still arriving
	closed  bool
	peerErr []error // why each peer's link failed; nil while healthy
}

// NewBox returns the matcher of rank in a communicator of size ranks.
func NewBox(rank, size int) *Box {
	b := &Box{
		rank:    rank,
		size:    size,
		queues:  make(map[key]*queue),
		landing: make(map[*Incoming]struct{}),
		peerErr: make([]error, size),
	}
	b.idle = sync.NewCond(&b.mu)
	return b
}

// Arrive announces a message of n bytes from peer under tag. Messages from
// one (peer, tag) must be announced in the order they were sent. The caller
// then lands the n bytes through the Incoming. It fails with
// transport.ErrClosed after Close, or with the peer's error after FailPeer.
func (b *Box) Arrive(peer int, tag transport.Tag, n int) (*Incoming, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, transport.ErrClosed
	}
	if err := b.peerErr[peer]; err != nil {
		return nil, err
	}
	in := &Incoming{box: b, peer: peer, n: n}
	k := key{peer, tag}
	q := b.queues[k]
	if q != nil && len(q.posted) > 0 {
		req := q.posted[0]
		q.posted[0] = nil
		q.posted = q.posted[1:]
		b.dropIfEmpty(k, q)
		if len(req.buf) != n {
			// The message is consumed by the failed Recv; its bytes are discarded.
			req.fire(fmt.Errorf("recv from rank %d tag %#x: got %d bytes, want %d: %w",
				peer, uint64(tag), n, len(req.buf), transport.ErrSizeMismatch))
		} else {
			in.req = req
			in.target = req.buf
			req.in = in
		}
	} else {
		in.target = make([]byte, n)
		in.own = true
		if q == nil {
			q = &queue{}
			b.queues[k] = q
		}
		q.arrived = append(q.arrived, in)
	}
	if n == 0 {
		in.finish()
	} else {
		b.landing[in] = struct{}{}
	}
	return in, nil
}

// Recv fills buf with the next message from peer under tag, waiting for it
// until ctx is done. See transport.Endpoint.Recv.
func (b *Box) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("recv from rank %d tag %#x: %w", peer, uint64(tag), err)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return transport.ErrClosed
	}
	k := key{peer, tag}
	q := b.queues[k]
	if q != nil && len(q.arrived) > 0 {
		in := q.arrived[0]
		q.arrived[0] = nil
		q.arrived = q.arrived[1:]
		b.dropIfEmpty(k, q)
		return b.claimArrived(ctx, in, tag, buf) // unlocks
	}
	if err := b.peerErr[peer]; err != nil {
		b.mu.Unlock()
		return err
	}
	req := &request{buf: buf, done: make(chan struct{}, 1)}
	if q == nil {
		q = &queue{}
		b.queues[k] = q
	}
	q.posted = append(q.posted, req)
	b.mu.Unlock()

	var ctxErr error
	select {
	case <-req.done:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if !req.fired {
		// Gave up first: unpost, or detach from the message landing in buf.
		if req.in == nil {
			b.unpost(k, req)
		} else {
			b.detach(req.in)
		}
		return fmt.Errorf("recv from rank %d tag %#x: %w", peer, uint64(tag), ctxErr)
	}
	if req.err != nil && req.in != nil {
		b.detach(req.in)
	}
	return req.err
}

// claimArrived hands a message that arrived before its Recv to that Recv.
// Called with b.mu held; returns with it released.
func (b *Box) claimArrived(ctx context.Context, in *Incoming, tag transport.Tag, buf []byte) error {
	if in.n != len(buf) {
		in.target = nil // discard whatever is still to come
		b.mu.Unlock()
		return fmt.Errorf("recv from rank %d tag %#x: got %d bytes, want %d: %w",
			in.peer, uint64(tag), in.n, len(buf), transport.ErrSizeMismatch)
	}
	if !in.complete && in.failed == nil {
		// Still landing: wait for its last byte.
		req := &request{done: make(chan struct{}, 1)}
		in.waiter = req
		b.mu.Unlock()
		select {
		case <-req.done:
		case <-ctx.Done():
		}
		b.mu.Lock()
		if !req.fired {
			in.waiter = nil
			in.target = nil // the message is lost with the abandoned Recv
			b.mu.Unlock()
			return fmt.Errorf("recv from rank %d tag %#x: %w", in.peer, uint64(tag), ctx.Err())
		}
	}
	if in.failed != nil {
		b.mu.Unlock()
		return in.failed
	}
	data := in.target
	in.target = nil
	b.mu.Unlock()
	copy(buf, data) // complete: nobody writes data any more
	return nil
}

// FailPeer marks the link to peer as broken: receives from it that are
// waiting, and later ones with nothing buffered, fail with a
// *transport.PeerError wrapping cause. Messages that arrived completely are
// still delivered.
func (b *Box) FailPeer(peer int, cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.peerErr[peer] != nil {
		return
	}
	err := &transport.PeerError{Peer: peer, Op: "recv", Err: cause}
	b.peerErr[peer] = err
	b.failWhere(func(p int) bool { return p == peer }, err)
}

// PeerErr reports why the link to peer failed, or nil.
func (b *Box) PeerErr(peer int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peerErr[peer]
}

// Close fails every waiting and later operation with transport.ErrClosed.
// Receives that were landing directly into their buffer return only after
// their writers are gone, which the transport ensures by stopping them.
func (b *Box) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.failWhere(func(int) bool { return true }, transport.ErrClosed)
}

// Closed reports whether Close was called.
func (b *Box) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// failWhere fails posted receives and incomplete messages of the peers
// selected by match. Called with b.mu held.
func (b *Box) failWhere(match func(peer int) bool, err error) {
	for k, q := range b.queues {
		if !match(k.peer) {
			continue
		}
		for _, req := range q.posted {
			req.fire(err)
		}
		q.posted = nil
		kept := q.arrived[:0]
		for _, in := range q.arrived {
			if in.complete {
				kept = append(kept, in)
			}
		}
		clear(q.arrived[len(kept):])
		q.arrived = kept
		b.dropIfEmpty(k, q)
	}
	for in := range b.landing {
		if !match(in.peer) {
			continue
		}
		in.failed = err
		if in.req != nil {
			in.req.fire(err)
		}
		if in.waiter != nil {
			in.waiter.fire(err)
		}
		delete(b.landing, in)
	}
}

// detach makes in discard its remaining bytes and waits until nobody is
// writing into the receive buffer it was landing in. Called with b.mu held.
func (b *Box) detach(in *Incoming) {
	in.target = nil
	in.req = nil
	for in.writers > 0 {
		for _, w := range in.active {
			if w != nil {
				w.Interrupt()
			}
		}
		b.idle.Wait()
	}
}

func (b *Box) unpost(k key, req *request) {
	q := b.queues[k]
	if q == nil {
		return
	}
	for i, r := range q.posted {
		if r == req {
			q.posted = append(q.posted[:i], q.posted[i+1:]...)
			break
		}
	}
	b.dropIfEmpty(k, q)
}

// dropIfEmpty forgets an empty queue, since tags are sequence numbers and
// the map would otherwise grow with every collective.
func (b *Box) dropIfEmpty(k key, q *queue) {
	if len(q.arrived) == 0 && len(q.posted) == 0 {
		delete(b.queues, k)
	}
}

// request is one waiting Recv.
type request struct {
	buf   []byte
	done  chan struct{} // capacity 1, signalled once by fire
	err   error
	fired bool
	in    *Incoming // the message landing in buf, once matched
}

// fire completes the request with err (nil: success). Called with the box
// lock held; later calls are ignored.
func (r *request) fire(err error) {
	if r.fired {
		return
	}
	r.fired = true
	r.err = err
	r.done <- struct{}{}
}
