// Package match pairs incoming messages with posted receives, the part every
// transport shares: FIFO per (peer, tag), unexpected messages buffered until a
// Recv claims them, size checks, cancellation, and failure of one peer or of
// the whole endpoint.
//
// A transport calls Arrive when a message from a peer starts to arrive, then
// lands its bytes through the returned Incoming (Acquire/Release), possibly in
// several pieces and from several goroutines. When a Recv is already posted,
// the bytes land directly in its buffer; otherwise in storage owned by the
// Incoming. A Recv that claims a message still arriving in order takes over:
// the bytes so far are copied once and the rest lands in its buffer.
package match

import (
	"context"
	"fmt"
	"sync"

	"github.com/hccl-go/hccl-go/transport"
)

// Interrupter stops a goroutine that is landing bytes into an Incoming, so
// that a Recv giving up (timeout, failure) or taking over can proceed without
// racing with it. An interrupted writer Releases what it landed and Acquires
// again for the rest.
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
	store      storagePool

	mu      sync.Mutex
	idle    *sync.Cond // broadcast when a detached or switching Incoming loses its last writer
	queues  map[key]*queue
	landing map[*Incoming]struct{} // messages whose bytes are still arriving
	closed  bool
	peerErr []error // why each peer's link failed; nil while healthy
	arrived uint64  // messages announced so far (Incoming.seq)

	// Free lists, so that steady small-message traffic does not allocate.
	freeReqs   []*request
	freeQueues []*queue
	freeIns    []*Incoming
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
	in := b.newIncoming(peer, n)
	b.arrived++
	in.seq = b.arrived
	k := key{peer, tag}
	q := b.queues[k]
	if q != nil && len(q.posted) > 0 {
		req := popFront(&q.posted)
		b.dropIfEmpty(k, q)
		if len(req.buf) != n {
			// The message is consumed by the failed Recv; its bytes are discarded.
			req.fire(mismatch(peer, tag, n, len(req.buf)))
		} else {
			in.bind(req)
		}
	} else {
		in.store = b.store.get(n)
		in.target = (*in.store)[:n]
		in.own = true
		if q == nil {
			q = b.newQueue(k)
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
	defer b.mu.Unlock()
	if b.closed {
		return transport.ErrClosed
	}
	k := key{peer, tag}
	q := b.queues[k]
	if q != nil && len(q.arrived) > 0 {
		in := popFront(&q.arrived)
		b.dropIfEmpty(k, q)
		return b.claim(ctx, in, tag, buf)
	}
	if err := b.peerErr[peer]; err != nil {
		return err
	}
	req := b.newRequest(buf)
	if q == nil {
		q = b.newQueue(k)
	}
	q.posted = append(q.posted, req)
	return b.await(ctx, k, req)
}

// TryRecvAny implements transport.AnySource: it takes, of the messages
// under tag from the admitted peers that nobody has received yet, the one
// that arrived first.
func (b *Box) TryRecvAny(ctx context.Context, tag transport.Tag, buf []byte, accept func(peer int) bool) (int, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return -1, false, transport.ErrClosed
	}
	var first *queue
	from := -1
	for p := range b.size {
		if !accept(p) {
			continue
		}
		q := b.queues[key{p, tag}]
		if q != nil && len(q.arrived) > 0 && (first == nil || q.arrived[0].seq < first.arrived[0].seq) {
			first, from = q, p
		}
	}
	if first == nil {
		for p, err := range b.peerErr {
			if err != nil && accept(p) {
				return -1, false, err
			}
		}
		return -1, false, nil
	}
	in := popFront(&first.arrived)
	b.dropIfEmpty(key{from, tag}, first)
	return from, true, b.claim(ctx, in, tag, buf)
}

// claim hands a message that arrived before its Recv to that Recv. Called
// with b.mu held.
func (b *Box) claim(ctx context.Context, in *Incoming, tag transport.Tag, buf []byte) error {
	switch {
	case in.n != len(buf):
		if in.complete {
			b.store.put(in.store)
			b.freeIncoming(in)
		} else {
			in.target = nil // discard whatever is still to come
			in.store = nil  // a writer may still hold it: leave it to the GC
		}
		return mismatch(in.peer, tag, in.n, len(buf))
	case in.complete:
		b.copyOut(in, buf)
		return nil
	case in.failed != nil:
		return in.failed
	case !in.spansLost:
		// Copy what landed, let the rest land in buf.
		req := b.newRequest(buf)
		if b.switchTarget(in, req) {
			b.freeRequest(req)
			return nil
		}
		return b.await(ctx, key{in.peer, tag}, req)
	}
	// Landed in too many pieces to track: wait for its last byte.
	req := b.newRequest(nil)
	in.waiter = req
	if err := b.await(ctx, key{in.peer, tag}, req); err != nil {
		in.waiter = nil
		in.target = nil // the message is lost with the abandoned Recv
		in.store = nil
		return err
	}
	b.copyOut(in, buf)
	return nil
}

// copyOut copies a complete message from its own storage into buf and
// recycles both. Called with b.mu held, which it releases during the copy:
// the message is out of every queue and nobody writes it any more.
func (b *Box) copyOut(in *Incoming, buf []byte) {
	b.mu.Unlock()
	copy(buf, in.target)
	b.mu.Lock()
	b.store.put(in.store)
	b.freeIncoming(in)
}

// switchTarget makes the rest of in land in req's buffer, after copying the
// bytes landed so far (the spans it tracked). It reports true when
// the message turned out complete (all of it copied): req is then not bound
// and the Recv is done. Called with b.mu held.
func (b *Box) switchTarget(in *Incoming, req *request) bool {
	in.switching = true
	for in.writers > 0 {
		in.interruptWriters()
		b.idle.Wait()
	}
	// The last writer may have completed the message meanwhile.
	old, store := in.target, in.store
	b.mu.Unlock()
	for _, s := range in.spans { // no writer can touch either buffer or spans now
		copy(req.buf[s.from:s.to], old[s.from:s.to])
	}
	b.mu.Lock()
	in.switching = false
	in.own = false
	in.store = nil
	in.target = nil
	b.store.put(store)
	b.idle.Broadcast()
	switch {
	case in.complete:
		b.freeIncoming(in)
		return true
	case in.failed != nil:
		req.fire(in.failed)
	default:
		in.bind(req)
	}
	return false
}

// await waits, with b.mu held (released meanwhile), until req is answered
// or ctx is done, then recycles req.
func (b *Box) await(ctx context.Context, k key, req *request) error {
	b.mu.Unlock()
	var ctxErr error
	select {
	case <-req.done:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	b.mu.Lock()
	defer b.freeRequest(req)
	if !req.fired {
		// Gave up first: unpost, or detach from the message landing in buf.
		if req.in == nil {
			b.unpost(k, req)
		} else {
			b.detach(req.in)
		}
		return fmt.Errorf("recv from rank %d tag %#x: %w", k.peer, uint64(k.tag), ctxErr)
	}
	if req.err != nil && req.in != nil {
		b.detach(req.in)
	}
	return req.err
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
		q.posted = q.posted[:0]
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
		in.interruptWriters()
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
			copy(q.posted[i:], q.posted[i+1:])
			q.posted[len(q.posted)-1] = nil
			q.posted = q.posted[:len(q.posted)-1]
			break
		}
	}
	b.dropIfEmpty(k, q)
}

func (b *Box) newQueue(k key) *queue {
	var q *queue
	if n := len(b.freeQueues); n > 0 {
		q = b.freeQueues[n-1]
		b.freeQueues = b.freeQueues[:n-1]
	} else {
		q = &queue{}
	}
	b.queues[k] = q
	return q
}

// dropIfEmpty forgets an empty queue, since tags are sequence numbers and
// the map would otherwise grow with every collective.
func (b *Box) dropIfEmpty(k key, q *queue) {
	if len(q.arrived) == 0 && len(q.posted) == 0 {
		delete(b.queues, k)
		q.arrived, q.posted = q.arrived[:0], q.posted[:0]
		b.freeQueues = append(b.freeQueues, q)
	}
}

// maxFree bounds the free lists.
const maxFree = 64

func (b *Box) newRequest(buf []byte) *request {
	if n := len(b.freeReqs); n > 0 {
		r := b.freeReqs[n-1]
		b.freeReqs = b.freeReqs[:n-1]
		r.buf = buf
		return r
	}
	return &request{buf: buf, done: make(chan struct{}, 1)}
}

// freeRequest recycles a request whose Recv is returning: nothing refers to
// it any more (fire, bind and detach drop the references).
func (b *Box) freeRequest(r *request) {
	select {
	case <-r.done: // fired after the Recv gave up
	default:
	}
	*r = request{done: r.done}
	if len(b.freeReqs) < maxFree {
		b.freeReqs = append(b.freeReqs, r)
	}
}

func (b *Box) newIncoming(peer, n int) *Incoming {
	var in *Incoming
	if k := len(b.freeIns); k > 0 {
		in = b.freeIns[k-1]
		b.freeIns = b.freeIns[:k-1]
	} else {
		in = &Incoming{box: b}
	}
	in.peer, in.n = peer, n
	in.active = in.activeArr[:0]
	in.spans = in.spanArr[:0]
	return in
}

// freeIncoming recycles a message that is complete and consumed: the
// transport no longer touches it (every byte was released) and neither does
// its Recv. Messages that fail or are abandoned are left to the GC instead.
func (b *Box) freeIncoming(in *Incoming) {
	if len(b.freeIns) < maxFree {
		*in = Incoming{box: b}
		b.freeIns = append(b.freeIns, in)
	}
}

// popFront removes the first element of a queue, keeping the capacity for
// reuse.
func popFront[T any](s *[]*T) *T {
	q := *s
	v := q[0]
	copy(q, q[1:])
	q[len(q)-1] = nil
	*s = q[:len(q)-1]
	return v
}

func mismatch(peer int, tag transport.Tag, got, want int) error {
	return fmt.Errorf("recv from rank %d tag %#x: got %d bytes, want %d: %w",
		peer, uint64(tag), got, want, transport.ErrSizeMismatch)
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

// Queued reports the receives posted and the messages arrived (whole or
// still landing) for (peer, tag) that nothing has matched yet.
func (b *Box) Queued(peer int, tag transport.Tag) (posted, arrived int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queues[key{peer, tag}]; q != nil {
		return len(q.posted), len(q.arrived)
	}
	return 0, 0
}
