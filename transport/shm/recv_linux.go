package shm

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

// maxMessage bounds the length a peer may announce; anything larger is a
// corrupt ring.
const maxMessage = 1 << 46

// inRing is the receiving side of a peer's ring in our segment. Only the
// holder of Endpoint.token touches it.
type inRing struct {
	peer int
	r    ring
	pos  uint64   // position of the next slot to consume
	cur  *landing // message whose continuation slots are still to come
	dead bool     // the peer failed: stop reading
	// offerSeen is when the single-copy offer at pos was first seen
	// without a receive for it (zero: none waiting).
	offerSeen time.Time
	// readySince is when the reader first saw the slot at pos published
	// (zero: not yet); see shouldDrain.
	readySince time.Time
	// read is a single-copy message read whole from the slot at pos, to
	// complete once that slot is free: its sender waits for the slot, and
	// the receive's owner may close the endpoint as soon as it completes.
	read *landing
}

func newInRing(peer int, r ring) *inRing { return &inRing{peer: peer, r: r} }

// Recv implements transport.Endpoint. The calling goroutine drains the rings
// itself while it spins, so a message that comes soon is received without
// waking any other goroutine; after the spin and yield budget it sleeps and
// leaves the draining to the reader goroutine.
func (e *Endpoint) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	if err := e.checkPeer(peer); err != nil {
		return fmt.Errorf("shm recv: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("recv from rank %d tag %#x: %w", peer, uint64(tag), err)
	}
	e.mu.Lock()
	r := e.post(peer, tag, buf)
	e.mu.Unlock()
	return e.finishRecv(ctx, r, peer, tag)
}

// finishRecv waits for the posted receive r from peer under tag and returns
// its outcome; when ctx ends first it withdraws r, so that nothing lands in
// its buffer afterwards.
func (e *Endpoint) finishRecv(ctx context.Context, r *request, peer int, tag transport.Tag) error {
	if err := e.awaitRecv(ctx, r); err != nil {
		// Holding token, nobody is writing into buf (see recvCMA).
		e.token.Lock()
		e.mu.Lock()
		e.cancel(r, key{peer, tag}, fmt.Errorf("recv from rank %d tag %#x: %w", peer, uint64(tag), err))
		e.mu.Unlock()
		e.token.Unlock()
	}
	return r.err // final: done was set, or cancel set it
}

// awaitRecv waits until r is done (nil) or ctx ends (its error).
func (e *Endpoint) awaitRecv(ctx context.Context, r *request) error {
	if r.done.Load() {
		return nil
	}
	if err := e.pollFor(ctx, r); err != nil || r.done.Load() {
		return err
	}
	e.mu.Lock()
	if r.done.Load() {
		e.mu.Unlock()
		return nil
	}
	r.ch = make(chan struct{})
	e.mu.Unlock()
	e.parked.Add(1) // the reader drains at once for sleeping receives
	defer e.parked.Add(-1)
	e.wakeReader() // we stop draining: the reader takes over
	select {
	case <-r.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pollFor drains the rings until r is done or the spin and yield budget is
// spent (nil error either way), or ctx ends.
func (e *Endpoint) pollFor(ctx context.Context, r *request) error {
	e.pollers.Add(1)
	defer e.pollers.Add(-1)
	start := time.Now()
	spinEnd := e.cfg.SpinTime
	yieldEnd := spinEnd + e.cfg.YieldTime
	var y futex.Yielder
	for {
		if e.token.TryLock() {
			if !e.closed.Load() { // Close unmaps the rings after its own turn with token
				e.pollAll(r)
			}
			e.token.Unlock()
		}
		if r.done.Load() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		elapsed := time.Since(start)
		if elapsed >= yieldEnd {
			return nil
		}
		if elapsed >= spinEnd {
			y.Yield()
		}
	}
}

// pollAll drains what is ready in every ring, or, when until is not nil,
// stops as soon as until is done (what comes after is left in the rings for
// the receives to come, which then take it straight into their buffers). It
// reports whether anything was drained, and whether a single-copy offer
// waits for its receive (to be looked at again soon). The caller holds
// token.
func (e *Endpoint) pollAll(until *request) (worked, deferred bool) {
	for _, l := range e.local {
		if l.in.dead {
			continue
		}
		if until != nil && until.done.Load() {
			break
		}
		n, err := e.pollRing(l, 16, until)
		switch {
		case err == errDeferred:
			deferred = true
		case err != nil:
			e.failPeer(l, err, false)
		}
		worked = worked || n > 0
	}
	return worked, deferred
}

// pollRing consumes up to max published slots of l's ring, fewer if until
// is done first, and returns how many it consumed. An error means the ring
// holds garbage, or errDeferred. The caller holds token.
func (e *Endpoint) pollRing(l *link, max int, until *request) (int, error) {
	ir := l.in
	n := 0
	for ; n < max && (until == nil || !until.done.Load()); n++ {
		s := ir.r.slot(ir.pos)
		if slotFlag(s).Load() != ir.pos+1 {
			break
		}
		if err := e.consume(l, s); err != nil {
			return n, err
		}
		ir.pos++
		ir.readySince = time.Time{}
		ir.r.tail().Store(ir.pos) // the slot is free again
		ringBell(ir.r.spaceWaiters(), ir.r.spaceSeq())
		if m := ir.read; m != nil {
			ir.read = nil
			e.mu.Lock()
			e.complete(m)
			e.mu.Unlock()
		}
	}
	return n, nil
}

// consume lands the contents of one published slot.
func (e *Endpoint) consume(l *link, s []byte) error {
	ir := l.in
	if m := ir.cur; m != nil {
		chunk := slotBody(s)[:min(ir.r.slotSize, m.n-m.got)]
		e.mu.Lock()
		e.landChunk(m, chunk)
		e.mu.Unlock()
		if m.got == m.n {
			ir.cur = nil
		}
		return nil
	}
	tag := transport.Tag(binary.LittleEndian.Uint64(s[sTag:]))
	meta := binary.LittleEndian.Uint64(s[sMeta:])
	n, kind := meta&metaLenMask, meta>>kindShift
	if n > maxMessage {
		return fmt.Errorf("corrupt ring: message of %d bytes announced", n)
	}
	switch kind {
	case kindEager:
		e.mu.Lock()
		m := e.arrive(ir.peer, tag, int(n))
		var first []byte
		if n <= inlineMax {
			first = s[sInline : sInline+n]
		} else {
			first = slotBody(s)[:min(uint64(ir.r.slotSize), n)]
		}
		if len(first) > 0 {
			e.landChunk(m, first)
		}
		e.mu.Unlock()
		if m.got < m.n {
			ir.cur = m
		}
	case kindCMA:
		return e.consumeCMA(l, s, tag, int(n))
	default:
		return fmt.Errorf("corrupt ring: message kind %d", kind)
	}
	return nil
}
