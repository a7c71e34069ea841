package tcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/match"
)

// readBufferSize is each connection's read buffer: small messages and frame
// headers are read through it, large bodies bypass it.
const readBufferSize = 64 << 10

// link is the set of connections (streams) to one peer.
type link struct {
	ep       *Endpoint
	peer     int
	streams  []*stream
	fragSize int // body bytes per frame this side sends

	dead     chan struct{} // closed when the link fails
	failOnce sync.Once
	cause    error // why it failed; set before dead is closed

	// nextSeq numbers outgoing messages; guarded by stream 0's write token,
	// so numbers follow the order of start frames on stream 0.
	nextSeq uint64

	// Receive side: messages announced on stream 0 whose later frames are
	// still to come, possibly on other streams.
	rmu       sync.Mutex
	rcond     *sync.Cond // signalled on announcement (if waiting > 0), failure, and goodbye on stream 0
	announced uint64     // start frames seen; the next expected sequence number
	partial   map[uint64]*partialMsg
	waiting   int
	broken    bool
	byes      int  // streams the peer said goodbye on
	startsEnd bool // the peer said goodbye on stream 0: nothing more is announced
}

func newLink(e *Endpoint, peer int, conns []*net.TCPConn, fragSize int) *link {
	l := &link{
		ep:       e,
		peer:     peer,
		fragSize: fragSize,
		dead:     make(chan struct{}),
		partial:  make(map[uint64]*partialMsg),
	}
	l.rcond = sync.NewCond(&l.rmu)
	for i, c := range conns {
		l.streams = append(l.streams, &stream{
			link:  l,
			index: i,
			conn:  c,
			wtok:  make(chan struct{}, 1),
			br:    bufio.NewReaderSize(c, readBufferSize),
			lowat: newRcvLowat(rcvLowatSetter(c)),
		})
	}
	return l
}

// fail closes the link for good: every connection to the peer is closed,
// which stops its readers and blocked writers, and the peer's pending and
// later receives fail. Only the first cause counts.
func (l *link) fail(cause error) {
	l.failOnce.Do(func() {
		l.cause = cause
		close(l.dead)
		for _, s := range l.streams {
			_ = s.conn.Close()
		}
		l.rmu.Lock()
		l.broken = true
		l.rcond.Broadcast()
		l.rmu.Unlock()
		if !l.ep.isClosing() {
			l.ep.cfg.Logf("hccl-go tcp: rank %d: link to rank %d failed: %v", l.ep.rank, l.peer, cause)
			l.ep.box.FailPeer(l.peer, cause)
		}
	})
}

// err is the error an operation of kind op reports once the link failed.
func (l *link) err(op string) error {
	if l.ep.isClosing() {
		return transport.ErrClosed
	}
	return &transport.PeerError{Peer: l.peer, Op: op, Err: l.cause}
}

func (l *link) isDead() bool {
	select {
	case <-l.dead:
		return true
	default:
		return false
	}
}

// stripeMinBytes is the smallest message striped over several streams;
// below it one stream is faster than the coordination.
const stripeMinBytes = 256 << 10

// send writes one message. The start frame goes on stream 0; the rest of the
// body follows in frames, spread over all streams for large messages.
func (l *link) send(ctx context.Context, tag transport.Tag, data []byte) error {
	n := len(data)
	nstreams := len(l.streams)
	if n < stripeMinBytes {
		nstreams = 1
	}
	// Part k of the body, [bounds[k], bounds[k+1]), travels on stream k.
	part := (n + nstreams - 1) / nstreams
	part = (part + 4095) &^ 4095
	first := min(n, l.fragSize, part)

	if uint64(n) > maxMessageBytes {
		return fmt.Errorf("send to rank %d: message of %d bytes exceeds the bound %d", l.peer, n, uint64(maxMessageBytes))
	}
	s0 := l.streams[0]
	if err := s0.acquire(ctx); err != nil {
		return err
	}
	seq := l.nextSeq
	l.nextSeq++
	err := s0.writeFrame(ctx, frameHeader{Kind: frameStart, FragLen: uint32(first), Tag: tag, Seq: seq, MsgLen: uint64(n)}, data[:first])
	s0.release()
	if err != nil || first == n {
		return err
	}
	if nstreams == 1 {
		return l.abandonIfCancelled(s0.writeFrames(ctx, tag, seq, data, first, n))
	}

	errs := make([]error, nstreams)
	var wg sync.WaitGroup
	for k := 1; k < nstreams; k++ {
		from, to := min(k*part, n), min((k+1)*part, n)
		if from < to {
			wg.Go(func() { errs[k] = l.streams[k].writeFrames(ctx, tag, seq, data, from, to) })
		}
	}
	errs[0] = s0.writeFrames(ctx, tag, seq, data, first, min(part, n))
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return l.abandonIfCancelled(err)
		}
	}
	return nil
}

// abandonIfCancelled fails the link when a send gave up (ctx) after its
// start frame: the peer would otherwise wait forever for the rest of a
// message that already matched its receive.
func (l *link) abandonIfCancelled(err error) error {
	var ce *sendCtxError
	if errors.As(err, &ce) {
		l.fail(fmt.Errorf("a send was cancelled mid-message: %w", ce.err))
	}
	return err
}

// partialMsg is a message announced on stream 0 with frames still due.
type partialMsg struct {
	in  *match.Incoming
	tag transport.Tag
	due uint64 // bytes not yet announced by a frame header
}

var errProtocol = errors.New("protocol violation")

// announce handles a start frame: the next message from the peer, in order.
func (l *link) announce(h frameHeader) (*match.Incoming, error) {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if h.Seq != l.announced {
		return nil, fmt.Errorf("%w: message %d announced, expected %d", errProtocol, h.Seq, l.announced)
	}
	in, err := l.ep.box.Arrive(l.peer, h.Tag, int(h.MsgLen))
	if err != nil {
		return nil, err
	}
	l.announced++
	if rest := h.MsgLen - uint64(h.FragLen); rest > 0 {
		l.partial[h.Seq] = &partialMsg{in: in, tag: h.Tag, due: rest}
	}
	if l.waiting > 0 {
		l.rcond.Broadcast()
	}
	return in, nil
}

// lookup finds the message a data frame belongs to. A frame on a secondary
// stream may overtake its start frame on stream 0: then it waits for it.
func (l *link) lookup(h frameHeader, onStream0 bool) (*match.Incoming, error) {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	for h.Seq >= l.announced && !onStream0 && !l.broken && !l.startsEnd {
		l.waiting++
		l.rcond.Wait()
		l.waiting--
	}
	if l.broken {
		return nil, errors.New("link closed")
	}
	m := l.partial[h.Seq]
	if m == nil || m.tag != h.Tag || uint64(m.in.Len()) != h.MsgLen || uint64(h.FragLen) > m.due {
		return nil, fmt.Errorf("%w: data frame for unknown message %d", errProtocol, h.Seq)
	}
	m.due -= uint64(h.FragLen)
	if m.due == 0 {
		delete(l.partial, h.Seq)
	}
	return m.in, nil
}
