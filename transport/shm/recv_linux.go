package shm

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/match"
)

// maxMessage bounds the length a peer may announce; anything larger is a
// corrupt ring.
const maxMessage = 1 << 46

// inRing is the receiving side of a peer's ring in our segment. Only the
// reader goroutine touches it.
type inRing struct {
	peer int
	r    ring
	pos  uint64 // position of the next slot to consume
	cur  *inMsg // message whose continuation slots are still to come
	dead bool   // the peer failed: stop reading
}

// inMsg is a message spanning several slots, partly received.
type inMsg struct {
	in     *match.Incoming // nil: discard the bytes
	n, got int
}

func newInRing(peer int, r ring) *inRing { return &inRing{peer: peer, r: r} }

// Recv implements transport.Endpoint.
func (e *Endpoint) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	if err := e.checkPeer(peer); err != nil {
		return fmt.Errorf("shm recv: %w", err)
	}
	e.kickReader()
	return e.box.Recv(ctx, peer, tag, buf)
}

// kickReader makes the reader poll (and spin) again: a message for this
// receive is probably on its way.
func (e *Endpoint) kickReader() {
	e.recvPosts.Add(1)
	e.life.RLock()
	defer e.life.RUnlock()
	if !e.closed.Load() {
		ringBell(e.hdr.waiters(), e.hdr.bell())
	}
}

// pollRing consumes up to max published slots of l's ring and returns how
// many it consumed. An error means the ring holds garbage.
func (e *Endpoint) pollRing(l *link, max int) (int, error) {
	ir := l.in
	n := 0
	for ; n < max; n++ {
		s := ir.r.slot(ir.pos)
		if slotFlag(s).Load() != ir.pos+1 {
			break
		}
		if err := e.consume(l, s); err != nil {
			return n, err
		}
		ir.pos++
		ir.r.tail().Store(ir.pos) // the slot is free again
		ringBell(ir.r.spaceWaiters(), ir.r.spaceSeq())
	}
	return n, nil
}

// consume lands the contents of one published slot.
func (e *Endpoint) consume(l *link, s []byte) error {
	ir := l.in
	if m := ir.cur; m != nil {
		chunk := slotBody(s)[:min(ir.r.slotSize, m.n-m.got)]
		land(m.in, m.got, chunk)
		m.got += len(chunk)
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
	in, err := e.box.Arrive(ir.peer, tag, int(n))
	if err != nil {
		in = nil // endpoint closed or peer failed: drop the bytes
	}
	switch kind {
	case kindEager:
		if n <= inlineMax {
			land(in, 0, s[sInline:sInline+n])
			return nil
		}
		first := slotBody(s)[:min(uint64(ir.r.slotSize), n)]
		land(in, 0, first)
		if len(first) < int(n) {
			ir.cur = &inMsg{in: in, n: int(n), got: len(first)}
		}
	case kindCMA:
		e.recvCMA(l, s, in, int(n))
	default:
		return fmt.Errorf("corrupt ring: message kind %d", kind)
	}
	return nil
}

// land copies src to bytes [off, off+len(src)) of an arriving message.
func land(in *match.Incoming, off int, src []byte) {
	if in == nil || len(src) == 0 {
		return
	}
	if dst := in.Acquire(off, len(src), nil); dst != nil {
		copy(dst, src)
	}
	in.Release(len(src), nil)
}
