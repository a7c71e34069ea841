package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/hccl-go/hccl-go/transport"
)

// Single-copy transfers (cross-memory attach). For a large message the
// sender publishes one slot holding the address of its buffer and waits;
// the receiver reads the buffer with process_vm_readv straight into the
// receive's buffer, then frees the slot, which is the sender's
// acknowledgement. If the kernel refuses the read (ptrace rules, seccomp,
// ENOSYS), the receiver sets the ring's cmaRefused flag before freeing the
// slot; the sender then sends the same bytes through the ring as
// continuation slots, and never tries single-copy on that ring again.

// errCMA is the cause of a forced refusal (Config.forceCMARefusal).
var errCMA = errors.New("process_vm_readv refused (forced by configuration)")

// useCMA reports whether a message of n bytes to l goes single-copy.
func (e *Endpoint) useCMA(l *link, n int) bool {
	return sysProcessVMReadv > 0 && !e.cfg.DisableCMA && n >= e.cfg.CMAThreshold &&
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
	return o.r.cmaRefused().Load() == 0, nil
}

// recvCMA reads a single-copy message announced in slot s into where m
// lands. The caller holds token, so nobody cancels or closes a receive
// while its buffer is being written outside mu. A refused read turns m into
// a message whose bytes come through the ring.
func (e *Endpoint) recvCMA(l *link, s []byte, m *landing) error {
	addr := uintptr(binary.LittleEndian.Uint64(s[sInline:]))
	if m.n == 0 {
		return nil // arrive completed it
	}
	e.mu.Lock()
	if m.req == nil && m.msg == nil { // discarded: nobody wants the bytes
		m.got = m.n
		e.complete(m)
		e.mu.Unlock()
		return nil
	}
	dst := []byte(nil)
	if m.req != nil {
		dst = m.req.buf
	}
	e.mu.Unlock()
	private := dst == nil
	if private {
		// Nobody waits yet: read into storage of its own (a Recv may
		// claim the message meanwhile; see below).
		dst = make([]byte, m.n)
	}
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
	defer e.mu.Unlock()
	switch {
	case !private:
		m.got = m.n
		e.complete(m)
	case m.msg != nil:
		m.msg.pieces = append(m.msg.pieces, dst)
		m.got = m.n
		e.complete(m)
	default: // claimed or discarded meanwhile: land it as one chunk
		m.got = 0
		e.landChunk(m, dst)
	}
	return nil
}

// iovec is struct iovec, with the base as a plain address (the remote one
// is not a pointer of this process).
type iovec struct {
	base uintptr
	len  uint64
}

// readPeer copies len(dst) bytes at addr in process pid into dst.
func (e *Endpoint) readPeer(pid int, addr uintptr, dst []byte) error {
	if e.cfg.forceCMARefusal {
		return errCMA
	}
	for off := 0; off < len(dst); {
		local := iovec{base: uintptr(unsafe.Pointer(&dst[off])), len: uint64(len(dst) - off)}
		remote := iovec{base: addr + uintptr(off), len: uint64(len(dst) - off)}
		n, _, errno := syscall.Syscall6(sysProcessVMReadv, uintptr(pid),
			uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
		runtime.KeepAlive(dst)
		if errno != 0 {
			return fmt.Errorf("process_vm_readv: %w", errno)
		}
		if n == 0 {
			return errors.New("process_vm_readv: no progress")
		}
		off += int(n)
	}
	return nil
}
