package tcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/match"
)

// longAgo is a deadline in the past: setting it wakes a blocked read or write.
var longAgo = time.Unix(1, 0)

// errPeerClosed is the cause of a link whose peer closed its endpoint.
var errPeerClosed = errors.New("peer closed its endpoint")

// errInterrupted reports a read cut short by Interrupt.
var errInterrupted = errors.New("read interrupted")

// stream is one TCP connection of a link. Writers take turns frame by frame
// (wtok); one reader goroutine reads every frame that arrives.
type stream struct {
	link  *link
	index int
	conn  *net.TCPConn

	// Write side, guarded by wtok (a token: one frame writer at a time).
	wtok  chan struct{}
	hdr   [headerSize]byte
	iov   [2][]byte
	wbufs net.Buffers

	// Read side, used by the reader goroutine only.
	br    *bufio.Reader
	rhdr  [headerSize]byte
	lowat rcvLowat // the socket's receive low-water mark (rcvlowat.go)

	imu         sync.Mutex
	interrupted bool // a read deadline was set by Interrupt
}

// acquire takes the write token, unless ctx ends or the link dies first.
func (s *stream) acquire(ctx context.Context) error {
	select {
	case s.wtok <- struct{}{}:
	default:
		select {
		case s.wtok <- struct{}{}:
		case <-ctx.Done():
			return &sendCtxError{peer: s.link.peer, err: ctx.Err()}
		case <-s.link.dead:
			return s.link.err("send")
		}
	}
	if s.link.isDead() {
		s.release()
		return s.link.err("send")
	}
	return nil
}

func (s *stream) release() { <-s.wtok }

// sendCtxError is a send abandoned before it wrote anything.
type sendCtxError struct {
	peer int
	err  error
}

func (e *sendCtxError) Error() string { return fmt.Sprintf("send to rank %d: %v", e.peer, e.err) }
func (e *sendCtxError) Unwrap() error { return e.err }

// writeFrames sends bytes [from, to) of message seq as data frames, taking
// the write token per frame so other messages can interleave.
func (s *stream) writeFrames(ctx context.Context, tag transport.Tag, seq uint64, data []byte, from, to int) error {
	frag := s.link.fragSize
	for off := from; off < to; off += frag {
		end := min(off+frag, to)
		if err := s.acquire(ctx); err != nil {
			return err
		}
		err := s.writeFrame(ctx, frameHeader{Kind: frameData, FragLen: uint32(end - off), Tag: tag, Seq: seq, MsgLen: uint64(len(data)), Offset: uint64(off)}, data[off:end])
		s.release()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFrame writes header and body with one writev. The caller holds the
// write token. A frame cut short breaks the stream, so the link fails.
func (s *stream) writeFrame(ctx context.Context, h frameHeader, body []byte) error {
	encodeHeader(s.hdr[:], h)
	s.iov[0], s.iov[1] = s.hdr[:], body
	s.wbufs = s.iov[:]
	n, err := s.write(ctx, headerSize+len(body))
	s.iov[1] = nil // do not keep the caller's memory
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		if n == 0 {
			// Nothing written: the stream is intact, only this send is off.
			return &sendCtxError{peer: s.link.peer, err: ctx.Err()}
		}
		err = fmt.Errorf("cancelled after %d of %d bytes of a frame: %w", n, headerSize+len(body), ctx.Err())
	}
	if s.link.ep.isClosing() {
		return s.link.err("send")
	}
	s.link.fail(fmt.Errorf("write on stream %d: %w", s.index, err))
	return s.link.err("send")
}

// fastWriteWindow is how long a write may block before it is made
// cancellable by ctx (which costs a goroutine hand-off and allocations).
const fastWriteWindow = time.Millisecond

// fastWriteMaxBytes is the largest frame written with the fast window.
// Larger frames often outgrow the socket buffer on a slow link: the window
// would expire (a timer wake-up and a second writev per frame), so they arm
// the cancellation at once, which costs little beside their copy.
const fastWriteMaxBytes = 64 << 10

// write writes s.wbufs (size bytes), stopping early if ctx ends. Almost
// every small frame fits in the socket buffer and goes out at once, so for
// those the cancellation machinery is armed only when a first attempt,
// bounded by a short deadline, stalls.
//
// Each write sets the write deadline it needs before writing and leaves it
// behind afterwards: once every byte is written nothing may turn the frame
// into a failure. (Clearing the deadline after a complete write fails when
// the peer, having got the message, closed its endpoint and our reader
// closed the connection on its goodbye; the peer's last receive then
// succeeded while our send reported the link closed.)
func (s *stream) write(ctx context.Context, size int) (int64, error) {
	if ctx.Done() == nil {
		if err := s.conn.SetWriteDeadline(time.Time{}); err != nil {
			return 0, fmt.Errorf("clear write deadline: %w", err)
		}
		return s.wbufs.WriteTo(s.conn)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	if size <= fastWriteMaxBytes {
		if err := s.conn.SetWriteDeadline(time.Now().Add(fastWriteWindow)); err != nil {
			return 0, fmt.Errorf("set write deadline: %w", err)
		}
		var err error
		n, err = s.wbufs.WriteTo(s.conn)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
	}

	// A large frame, or the peer is not keeping up: wait for room until
	// ctx ends.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = s.conn.SetWriteDeadline(longAgo)
		close(fired)
	})
	if err := s.conn.SetWriteDeadline(time.Time{}); err != nil {
		stop()
		return n, fmt.Errorf("clear write deadline: %w", err)
	}
	m, err := s.wbufs.WriteTo(s.conn) // WriteTo consumed what was written
	if !stop() {
		<-fired // its deadline must not land on the next write's
	}
	return n + m, err
}

// sayBye tells the peer, best effort, that this side closes on purpose.
// It skips a stream whose writer is busy and gives up at deadline.
func (s *stream) sayBye(deadline time.Time) {
	select {
	case s.wtok <- struct{}{}:
	default:
		return
	}
	defer s.release()
	if s.conn.SetWriteDeadline(deadline) != nil {
		return
	}
	encodeHeader(s.hdr[:], frameHeader{Kind: frameBye})
	_, _ = s.conn.Write(s.hdr[:])
}

// readLoop reads frames until the connection fails or closes, then fails
// the link (a no-op when the endpoint is closing). A goodbye ends only its
// own stream while other streams may still hold the end of the peer's last
// messages (see saidBye).
func (l *link) readLoop(s *stream) {
	for {
		err := s.readFrame()
		if err == nil {
			continue
		}
		if errors.Is(err, errPeerClosed) {
			if !l.saidBye(s.index) {
				return
			}
		} else if l.byeHeard() {
			// The peer closes on purpose; a stream it could not say
			// goodbye on (its writer was busy) just ends.
			err = fmt.Errorf("%w (%w)", errPeerClosed, err)
		}
		l.fail(fmt.Errorf("read on stream %d: %w", s.index, err))
		return
	}
}

// readFrame reads one frame and lands its body where it belongs.
func (s *stream) readFrame() error {
	if _, err := s.readFull(s.rhdr[:], true); err != nil {
		return err
	}
	h, err := decodeHeader(s.rhdr[:], s.link.ep.cfg.MaxFrameBytes)
	if err != nil {
		return err
	}
	var in *match.Incoming
	switch h.Kind {
	case frameBye:
		return errPeerClosed
	case frameStart:
		if s.index != 0 {
			return fmt.Errorf("%w: start frame on stream %d", errProtocol, s.index)
		}
		in, err = s.link.announce(h)
	default:
		in, err = s.link.lookup(h, s.index == 0)
	}
	if err != nil {
		return err
	}
	return s.land(in, int(h.Offset), int(h.FragLen))
}

// land reads cnt body bytes into message in at off: straight into the
// receiver's buffer when it is posted, else into the message's own storage,
// else (receive abandoned) nowhere.
func (s *stream) land(in *match.Incoming, off, cnt int) error {
	for cnt > 0 {
		var n int
		var err error
		if dst := in.Acquire(off, cnt, s); dst != nil {
			n, err = s.readFull(dst, false)
		} else {
			n, err = s.discard(cnt)
		}
		in.Release(off, n, s)
		off += n
		cnt -= n
		if err != nil && !errors.Is(err, errInterrupted) {
			return err
		}
	}
	return nil
}

// readFull fills p. An Interrupt either restarts the read (retry) or ends it
// with errInterrupted, so the caller can ask where the rest goes. p never
// extends past the current frame, so the bytes it still needs are sure to
// come: a read that will go to the socket (nothing buffered) first sets the
// low-water mark for them.
func (s *stream) readFull(p []byte, retry bool) (int, error) {
	n := 0
	for n < len(p) {
		if s.br.Buffered() == 0 {
			if err := s.lowat.prepare(len(p) - n); err != nil {
				return n, err
			}
		}
		m, err := s.br.Read(p[n:])
		n += m
		if err != nil {
			if !s.takeInterrupt(err) {
				return n, err
			}
			if !retry {
				return n, errInterrupted
			}
		}
	}
	return n, nil
}

// discard skips cnt bytes of the connection. It reads through the buffer
// several times per call, so it keeps the low-water mark at 1 (abandoned
// receives are rare; they need not be cheap).
func (s *stream) discard(cnt int) (int, error) {
	if err := s.lowat.prepare(0); err != nil {
		return 0, err
	}
	n := 0
	for n < cnt {
		m, err := s.br.Discard(cnt - n)
		n += m
		if err != nil && !s.takeInterrupt(err) {
			return n, err
		}
	}
	return n, nil
}

// Interrupt implements match.Interrupter: it wakes the reader if it is
// blocked reading into a buffer whose receive is giving up.
func (s *stream) Interrupt() {
	s.imu.Lock()
	defer s.imu.Unlock()
	s.interrupted = true
	_ = s.conn.SetReadDeadline(longAgo)
}

// takeInterrupt reports whether err is the work of Interrupt, and if so
// clears the deadline so reading can go on.
func (s *stream) takeInterrupt(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	s.imu.Lock()
	defer s.imu.Unlock()
	if !s.interrupted {
		return false
	}
	s.interrupted = false
	_ = s.conn.SetReadDeadline(time.Time{})
	return true
}
