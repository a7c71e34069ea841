package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

var (
	errPeerClosed  = errors.New("peer endpoint closed")
	errLinkAborted = errors.New("link aborted: a send gave up in the middle of a message")
	errNotLocal    = errors.New("rank is not on this host (not connected through shared memory)")
)

// outRing is the sending side of our ring in a peer's segment.
type outRing struct {
	r    ring
	lock chan struct{} // capacity 1: one Send writes into the ring at a time

	// Guarded by lock.
	head   uint64 // position of the next slot to write
	tail   uint64 // last tail seen: slots below it are free
	broken error  // set when a Send gave up mid-message: the ring is unusable
}

func newOutRing(r ring) *outRing {
	return &outRing{r: r, lock: make(chan struct{}, 1)}
}

// Send implements transport.Endpoint. It returns once data is in the
// receiver's ring (or read by it, for single-copy transfers); it never waits
// for the matching Recv to be posted.
func (e *Endpoint) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	if err := e.checkPeer(peer); err != nil {
		return fmt.Errorf("shm send: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send to rank %d tag %#x: %w", peer, uint64(tag), err)
	}
	if peer == e.rank {
		return e.sendSelf(tag, data)
	}
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed.Load() {
		return transport.ErrClosed
	}
	l := e.links[peer]
	if err := e.linkErr(l); err != nil {
		return &transport.PeerError{Peer: peer, Op: "send", Err: err}
	}
	o := l.out
	if err := e.lockRing(ctx, o); err != nil {
		return fmt.Errorf("send to rank %d tag %#x: %w", peer, uint64(tag), err)
	}
	defer func() { <-o.lock }()
	if o.broken != nil {
		return &transport.PeerError{Peer: peer, Op: "send", Err: o.broken}
	}
	if err := e.sendMessage(ctx, l, tag, data); err != nil {
		return fmt.Errorf("send to rank %d tag %#x: %w", peer, uint64(tag), err)
	}
	return nil
}

// sendSelf delivers a message to this rank's own receives.
func (e *Endpoint) sendSelf(tag transport.Tag, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.matchClosed {
		return transport.ErrClosed
	}
	if l := e.arrive(e.rank, tag, len(data)); len(data) > 0 {
		e.landChunk(l, data)
	}
	return nil
}

// checkPeer validates a peer rank for Send and Recv.
func (e *Endpoint) checkPeer(peer int) error {
	if peer < 0 || peer >= e.size {
		return fmt.Errorf("peer rank %d out of range [0, %d)", peer, e.size)
	}
	if peer != e.rank && e.links[peer] == nil {
		return fmt.Errorf("peer rank %d: %w", peer, errNotLocal)
	}
	return nil
}

// linkErr says why nothing can be sent to l any more, or nil.
func (e *Endpoint) linkErr(l *link) error {
	if err := l.failed(); err != nil {
		return err
	}
	if l.hdr.closed().Load() != 0 {
		return errPeerClosed
	}
	return nil
}

// lockRing takes o's lock, giving up when ctx ends or the endpoint closes.
func (e *Endpoint) lockRing(ctx context.Context, o *outRing) error {
	select {
	case o.lock <- struct{}{}:
		return nil
	default:
	}
	select {
	case o.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.closedCh:
		return transport.ErrClosed
	}
}

// sendMessage writes one message into l's ring; the caller holds the lock.
func (e *Endpoint) sendMessage(ctx context.Context, l *link, tag transport.Tag, data []byte) error {
	if e.useCMA(l, len(data)) {
		done, err := e.sendCMA(ctx, l, tag, data)
		if done || err != nil {
			return err
		}
		// Refused by the receiver's kernel: the receiver now expects the
		// bytes through the ring, as continuation slots.
		return e.sendBody(ctx, l, data, 0, true)
	}
	o := l.out
	if err := e.waitSlot(ctx, l); err != nil {
		return err
	}
	s := o.r.slot(o.head)
	binary.LittleEndian.PutUint64(s[sTag:], uint64(tag))
	binary.LittleEndian.PutUint64(s[sMeta:], uint64(len(data))|kindEager<<kindShift)
	sent := 0
	if len(data) <= inlineMax {
		sent = copy(s[sInline:], data)
	} else {
		sent = copy(slotBody(s), data)
	}
	e.publish(l)
	return e.sendBody(ctx, l, data, sent, false)
}

// sendBody writes data[off:] into continuation slots. started says whether
// the receiver already holds part of the message, in which case giving up
// breaks the link (the receiver cannot tell where the next message starts).
func (e *Endpoint) sendBody(ctx context.Context, l *link, data []byte, off int, started bool) error {
	o := l.out
	started = started || off > 0
	for off < len(data) {
		if err := e.waitSlot(ctx, l); err != nil {
			if started {
				e.abortRing(l, err)
			}
			return err
		}
		off += copy(slotBody(o.r.slot(o.head)), data[off:])
		e.publish(l)
		started = true
	}
	return nil
}

// publish makes the slot at head visible to the receiver and wakes its
// reader if it sleeps.
func (e *Endpoint) publish(l *link) {
	o := l.out
	slotFlag(o.r.slot(o.head)).Store(o.head + 1)
	o.head++
	ringBell(l.hdr.waiters(), l.hdr.bell())
	if e.testAfterSlot != nil {
		e.testAfterSlot(o.head - 1)
	}
}

// waitSlot waits until the slot at head is free.
func (e *Endpoint) waitSlot(ctx context.Context, l *link) error {
	return e.waitTail(ctx, l, l.out.head+1-uint64(l.out.r.slots))
}

// waitTail waits until the receiver has consumed every slot below pos.
func (e *Endpoint) waitTail(ctx context.Context, l *link, pos uint64) error {
	o := l.out
	if int64(o.tail-pos) >= 0 {
		return nil
	}
	r := o.r
	ready := func() bool {
		o.tail = r.tail().Load()
		return int64(o.tail-pos) >= 0
	}
	check := func() error {
		if e.closed.Load() {
			return transport.ErrClosed
		}
		if err := e.linkErr(l); err != nil {
			return &transport.PeerError{Peer: l.rank, Op: "send", Err: err}
		}
		return nil
	}
	return e.wait(ctx, ready, check, r.spaceWaiters(), r.spaceSeq())
}

// abortRing marks l's ring unusable after a Send gave up mid-message; the
// receiver fails the link when it notices.
func (e *Endpoint) abortRing(l *link, cause error) {
	l.out.broken = fmt.Errorf("%w (%v)", errLinkAborted, cause)
	l.out.r.aborted().Store(1)
	l.hdr.bell().Add(1)
	futex.WakeAll(l.hdr.bell())
}
