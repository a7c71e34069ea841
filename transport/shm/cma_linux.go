package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"time"
	"unsafe"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/cma"
)

// Single-copy transfers (cross-memory attach). For a large message the
// sender publishes one slot holding the address of its buffer and waits;
// the receiver reads the buffer with process_vm_readv straight into the
// posted receive's buffer, then frees the slot, which is the sender's
// acknowledgement. Two answers send the bytes through the ring instead, as
// continuation slots: "not now" (cmaNack = the slot's position+1) when no
// receive was posted within a short patience, since reading into storage of
// our own would cost more than the ring (which also lets a receive posted
// mid-way take the rest in place); and "never" (cmaRefused) when the kernel
// refuses the read (ptrace rules, seccomp, ENOSYS), after which the sender
// stops offering on that ring.

// errCMA is the cause of a forced refusal (Config.forceCMARefusal).
var errCMA = errors.New("process_vm_readv refused (forced by configuration)")

// useCMA reports whether a message of n bytes to l goes single-copy.
func (e *Endpoint) useCMA(l *link, n int) bool {
	return cma.Supported() && !e.cfg.DisableCMA && n >= e.cfg.CMAThreshold &&
		l.samePidNS && l.out.r.cmaRefused().Load() == 0
}

// sendCMA offers data to the receiver for a single-copy read and waits until
// it was read. done=false with a nil error means the receiver refused: the
// caller sends the bytes through the ring. The caller holds the ring lock.
func (e *Endpoint) sendCMA(ctx context.Context, l *link, tag transport.Tag, data []byte) (done bool, err error) {
	o := l.out
	if err := e.waitSlot(ctx, l); err != nil {
		return false, err
	}
	pos := o.head
	s := o.r.slot(pos)
	binary.LittleEndian.PutUint64(s[sTag:], uint64(tag))
	binary.LittleEndian.PutUint64(s[sMeta:], uint64(len(data))|kindCMA<<kindShift)
	binary.LittleEndian.PutUint64(s[sInline:], uint64(uintptr(unsafe.Pointer(&data[0]))))
	e.publish(l)
	err = e.waitTail(ctx, l, pos+1)
	runtime.KeepAlive(data) // read by the peer until it freed the slot
	if err != nil {
		// The receiver may still read data, which our caller may change
		// as soon as we return: mark the ring aborted first. The receiver
		// checks that flag after its read and then drops the message.
		e.abortRing(l, err)
		return false, err
	}
	e.cmaSent.Add(1)
	ringPath := o.r.cmaRefused().Load() != 0 || o.r.cmaNack().Load() == pos+1
	return !ringPath, nil
}

// errDeferred means the single-copy offer at the head of a ring waits a
// little for its receive to be posted.
var errDeferred = errors.New("single-copy offer waits for its receive")

// cmaPatience is how long a single-copy offer of n bytes waits for its
// receive: about the time the copy itself takes, at most 200µs.
func cmaPatience(n int) time.Duration {
	return min(time.Duration(n/10)*time.Nanosecond, 200*time.Microsecond)
}

// consumeCMA answers the single-copy offer of a message of n bytes under tag
// in slot s: read it into the posted receive, or, when none comes within
// the patience, have the sender use the ring. The caller holds token.
func (e *Endpoint) consumeCMA(l *link, s []byte, tag transport.Tag, n int) error {
	ir := l.in
	e.mu.Lock()
	q := e.queues[key{ir.peer, tag}]
	posted := (q != nil && len(q.posted) > 0) || e.matchClosed || e.peerErr[ir.peer] != nil
	if !posted {
		now := time.Now()
		if ir.offerSeen.IsZero() {
			ir.offerSeen = now
		}
		if now.Sub(ir.offerSeen) < cmaPatience(n) {
			e.mu.Unlock()
			return errDeferred
		}
	}
	ir.offerSeen = time.Time{}
	m := e.arrive(ir.peer, tag, n)
	e.mu.Unlock()
	if !posted {
		e.cmaNacks.Add(1)
		ir.r.cmaNack().Store(ir.pos + 1) // before the slot is freed: the sender reads it then
		ir.cur = m
		return nil
	}
	return e.recvCMA(l, s, m)
}

// recvCMA reads the single-copy message announced in slot s into the
// receive m lands in. The caller holds token, so nobody cancels or closes
// that receive while its buffer is written outside mu. A refused read
// turns m into a message whose bytes come through the ring.
func (e *Endpoint) recvCMA(l *link, s []byte, m *landing) error {
	addr := uintptr(binary.LittleEndian.Uint64(s[sInline:]))
	e.mu.Lock()
	var dst []byte
	if m.req != nil {
		dst = m.req.buf
	}
	if dst == nil { // discarded (closed, failed peer, size mismatch)
		m.got = m.n
		e.complete(m)
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	err := e.readPeer(int(l.hdr.field(hPid)), addr, dst)
	if l.in.r.aborted().Load() != 0 {
		// The sender gave up while we read: its buffer may have changed.
		return errLinkAborted
	}
	if err != nil {
		e.cmaRefusals.Add(1)
		l.in.r.cmaRefused().Store(1) // before the slot is freed: the sender reads it then
		l.in.cur = m                 // the bytes follow through the ring
		return nil
	}
	e.cmaReceived.Add(1)
	e.mu.Lock()
	m.got = m.n
	e.mu.Unlock()
	l.in.read = m // completed once the offer's slot is free (pollRing)
	return nil
}

// readPeer copies len(dst) bytes at addr in process pid into dst.
func (e *Endpoint) readPeer(pid int, addr uintptr, dst []byte) error {
	if e.cfg.forceCMARefusal {
		return errCMA
	}
	return cma.Read(pid, dst, addr)
}
