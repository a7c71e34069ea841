package shm

import (
	"fmt"
	"sync/atomic"

	"github.com/hccl-go/hccl-go/transport"
)

// The matcher pairs arriving messages with receives: FIFO per (peer, tag),
// unexpected messages buffered until a Recv claims them, exact sizes. It is
// the shm twin of transport/internal/match, specialised so that a receiving
// goroutine can drain the rings itself while it waits (no hand-off to another
// goroutine on the fast path). All its state is guarded by Endpoint.mu;
// bytes are copied under that lock too, one slot at a time, which is what
// makes cancelling a receive safe: once it holds the lock, nobody writes
// into its buffer any more.

type key struct {
	peer int
	tag  transport.Tag
}

// queue holds, for one (peer, tag), messages nobody asked for yet or
// receives nobody answered yet (never both).
type queue struct {
	arrived []*message
	posted  []*request
}

// request is one Recv.
type request struct {
	buf  []byte
	done atomic.Bool // set, under mu, once err is final
	err  error
	ch   chan struct{} // made when the receiver sleeps; closed when done
	land *landing      // the message landing in buf, once matched
}

// message is one that arrived before its Recv, in storage of its own: the
// pieces as they landed (so that a message claimed while it arrives costs no
// storage for its remaining bytes, which land in the receive's buffer).
type message struct {
	n        int
	pieces   [][]byte
	complete bool
	land     *landing // while arriving
	seq      uint64   // arrival order, for receives from any peer
}

// copyTo copies the pieces that landed so far to buf.
func (m *message) copyTo(buf []byte) {
	off := 0
	for _, p := range m.pieces {
		off += copy(buf[off:], p)
	}
}

// landing is a message whose bytes are arriving, into a request's buffer,
// a message's storage, or nowhere (discarded).
type landing struct {
	peer int
	n    int
	got  int
	req  *request
	msg  *message
}

// finish completes r with err. Called with mu held; later calls are ignored.
func (r *request) finish(err error) {
	if r.done.Load() {
		return
	}
	r.err = err
	r.land = nil
	r.done.Store(true)
	if r.ch != nil {
		close(r.ch)
	}
}

// arrive announces a message of n bytes from peer under tag and returns
// where its bytes go. Called with mu held.
func (e *Endpoint) arrive(peer int, tag transport.Tag, n int) *landing {
	l := &landing{peer: peer, n: n}
	if e.matchClosed || e.peerErr[peer] != nil {
		return l // nobody will ever receive it
	}
	k := key{peer, tag}
	q := e.queues[k]
	if q != nil && len(q.posted) > 0 {
		r := q.posted[0]
		q.posted[0] = nil
		q.posted = q.posted[1:]
		e.dropIfEmpty(k, q)
		if len(r.buf) != n {
			// The message is consumed by the failed Recv and discarded.
			r.finish(fmt.Errorf("recv from rank %d tag %#x: got %d bytes, want %d: %w",
				peer, uint64(tag), n, len(r.buf), transport.ErrSizeMismatch))
		} else {
			l.req, r.land = r, l
		}
	} else {
		e.arrivals++
		m := &message{n: n, land: l, seq: e.arrivals}
		l.msg = m
		if q == nil {
			q = &queue{}
			e.queues[k] = q
		}
		q.arrived = append(q.arrived, m)
	}
	if n == 0 {
		e.complete(l)
	} else {
		e.landings[l] = struct{}{}
	}
	return l
}

// landChunk copies src to bytes [l.got, l.got+len(src)) of the message.
// Called with mu held.
func (e *Endpoint) landChunk(l *landing, src []byte) {
	switch {
	case l.req != nil:
		copy(l.req.buf[l.got:], src)
	case l.msg != nil:
		l.msg.pieces = append(l.msg.pieces, append([]byte(nil), src...))
	}
	l.got += len(src)
	if l.got == l.n {
		e.complete(l)
	}
}

// complete finishes a message whose last byte landed. Called with mu held.
func (e *Endpoint) complete(l *landing) {
	delete(e.landings, l)
	if l.req != nil {
		l.req.finish(nil)
	}
	if m := l.msg; m != nil {
		m.complete, m.land = true, nil
	}
}

// post starts a Recv: it takes an arrived message or queues the request.
// It returns the request, already finished when the outcome is known at
// once. Called with mu held.
func (e *Endpoint) post(peer int, tag transport.Tag, buf []byte) *request {
	r := &request{buf: buf}
	if e.matchClosed {
		r.finish(transport.ErrClosed)
		return r
	}
	k := key{peer, tag}
	q := e.queues[k]
	if q != nil && len(q.arrived) > 0 {
		m := q.arrived[0]
		q.arrived[0] = nil
		q.arrived = q.arrived[1:]
		e.dropIfEmpty(k, q)
		switch {
		case m.n != len(buf):
			if m.land != nil {
				m.land.msg = nil // discard what is still to come
			}
			r.finish(fmt.Errorf("recv from rank %d tag %#x: got %d bytes, want %d: %w",
				peer, uint64(tag), m.n, len(buf), transport.ErrSizeMismatch))
		case m.complete:
			m.copyTo(buf)
			r.finish(nil)
		default:
			// Still arriving: the rest lands straight in buf.
			m.copyTo(buf)
			l := m.land
			l.msg, l.req, r.land = nil, r, l
		}
		return r
	}
	if err := e.peerErr[peer]; err != nil {
		r.finish(err)
		return r
	}
	if q == nil {
		q = &queue{}
		e.queues[k] = q
	}
	q.posted = append(q.posted, r)
	return r
}

// cancel withdraws a request whose Recv gives up, so that nothing lands in
// its buffer afterwards. Called with mu held.
func (e *Endpoint) cancel(r *request, k key, err error) {
	if r.done.Load() {
		return
	}
	switch {
	case r.land != nil:
		r.land.req = nil // the message is lost with its receive
	default:
		if q := e.queues[k]; q != nil {
			for i, p := range q.posted {
				if p == r {
					q.posted = append(q.posted[:i], q.posted[i+1:]...)
					break
				}
			}
			e.dropIfEmpty(k, q)
		}
	}
	r.finish(err)
}

// failPeerLocked fails the receives involving peer with err and makes later
// ones fail too; completely arrived messages stay deliverable. Called with
// mu held.
func (e *Endpoint) failPeerLocked(peer int, err error) {
	if e.peerErr[peer] == nil {
		e.peerErr[peer] = err
	}
	e.failWhere(func(p int) bool { return p == peer }, err)
}

// closeMatcher fails every waiting and later receive with ErrClosed.
// Called with mu held.
func (e *Endpoint) closeMatcher() {
	e.matchClosed = true
	e.failWhere(func(int) bool { return true }, transport.ErrClosed)
}

// failWhere fails posted receives and arriving messages of the peers
// selected by match. Called with mu held.
func (e *Endpoint) failWhere(match func(peer int) bool, err error) {
	for k, q := range e.queues {
		if !match(k.peer) {
			continue
		}
		for _, r := range q.posted {
			r.finish(err)
		}
		q.posted = nil
		kept := q.arrived[:0]
		for _, m := range q.arrived {
			if m.complete {
				kept = append(kept, m)
			}
		}
		clear(q.arrived[len(kept):])
		q.arrived = kept
		e.dropIfEmpty(k, q)
	}
	for l := range e.landings {
		if !match(l.peer) {
			continue
		}
		if l.req != nil {
			l.req.finish(err)
		}
		l.req, l.msg = nil, nil
		delete(e.landings, l)
	}
}

// dropIfEmpty forgets an empty queue: tags are sequence numbers, and the map
// would otherwise grow with every collective.
func (e *Endpoint) dropIfEmpty(k key, q *queue) {
	if len(q.arrived) == 0 && len(q.posted) == 0 {
		delete(e.queues, k)
	}
}

// Queued implements transport.Queues: the receives posted and the messages
// taken off the rings (whole or still landing) for (peer, tag) that nothing
// has matched yet. A message still in its ring is not counted; the reader
// takes it off within unexpectedDelay.
func (e *Endpoint) Queued(peer int, tag transport.Tag) (posted, arrived int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if q := e.queues[key{peer, tag}]; q != nil {
		return len(q.posted), len(q.arrived)
	}
	return 0, 0
}
