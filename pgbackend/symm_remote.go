package pgbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/symm"
)

// One-sided operations on symmetric memory across hosts: a put, get or
// signal that names a rank of another host travels as a request over the
// communicator's links, and a server goroutine of the target, one per rank
// of another host, carries it out in the target's region and answers. The
// target's application takes no part. Requests of one rank to one target
// go one at a time (a lock per target), so a request's header, payload and
// answer never interleave with another's, and a put followed by a signal
// reaches the target in that order.
//
// Messages use point-to-point tags above every user tag (user tags have 32
// bits): symmRequestTag from requester to server, symmAnswerTag back. A
// request header is symmHeaderBytes: kind, window id, offset, length. A put
// sends its payload next; the server answers a put and a get with a status
// word (0: done), a get's data after it. A signal has no answer: it is
// counted when the server reads it, and a later request or wait orders
// after it.

const (
	symmRequestTag  = transport.P2PTagBit | 1<<39 | 1
	symmAnswerTag   = transport.P2PTagBit | 1<<39 | 2
	symmHeaderBytes = 32
)

// Kinds of request.
const (
	symmPut = iota + 1
	symmGet
	symmSignal
)

// symmRemote is symm.Remote over a communicator for the window with id.
type symmRemote struct {
	c  *Communicator
	id uint64
}

// symmServe holds the windows the servers of a communicator serve, and the
// requesters' locks.
type symmServe struct {
	mu      sync.Mutex
	changed *sync.Cond
	windows map[uint64]*symm.Window
	nextID  uint64
	started bool
	targets []sync.Mutex // requester side: one request at a time per target
}

// SymmRemote returns the Remote of the next symmetric allocation on c:
// every rank calls it once per allocation, in the same order, so that
// allocations have the same id on every rank.
func (c *Communicator) SymmRemote() symm.Remote {
	s := c.symmServe()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return symmRemote{c: c, id: s.nextID}
}

// ServeSymm lets ranks of other hosts reach w, the window of the
// allocation whose Remote is remote (from SymmRemote); StopSymm ends it.
// The servers start with the first window that has ranks on other hosts.
func (c *Communicator) ServeSymm(remote symm.Remote, w *symm.Window) {
	r, ok := remote.(symmRemote)
	if !ok || r.c != c {
		return
	}
	s := c.symmServe()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.windows[r.id] = w
	s.changed.Broadcast()
	if s.started {
		return
	}
	for p := range c.size {
		if !w.Local(p) {
			s.started = true
			go c.serveSymm(p)
		}
	}
}

// StopSymm stops serving the window of remote (before it closes).
func (c *Communicator) StopSymm(remote symm.Remote) {
	if r, ok := remote.(symmRemote); ok && r.c == c {
		s := c.symmServe()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.windows, r.id)
	}
}

func (c *Communicator) symmServe() *symmServe {
	c.symmOnce.Do(func() {
		c.symmSrv = &symmServe{windows: map[uint64]*symm.Window{}, targets: make([]sync.Mutex, c.size)}
		c.symmSrv.changed = sync.NewCond(&c.symmSrv.mu)
	})
	return c.symmSrv
}

// window waits until the window id is served (a peer may put before this
// rank's allocation has returned), at most the op timeout.
func (s *symmServe) window(ctx context.Context, id uint64) (*symm.Window, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.changed.Broadcast()
	})
	defer stop()
	for s.windows[id] == nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("symmetric allocation %d is not (or no longer) on this rank: %w", id, err)
		}
		s.changed.Wait()
	}
	return s.windows[id], nil
}

// serveSymm answers the requests of rank p until the communicator ends.
func (c *Communicator) serveSymm(p int) {
	header := make([]byte, symmHeaderBytes)
	for {
		if err := c.ep.Recv(c.ctx, p, symmRequestTag, header); err != nil {
			return // the communicator failed or was destroyed
		}
		kind := binary.LittleEndian.Uint64(header[0:])
		id := binary.LittleEndian.Uint64(header[8:])
		off := int(binary.LittleEndian.Uint64(header[16:]))
		n := int(binary.LittleEndian.Uint64(header[24:]))
		if err := c.answerSymm(p, kind, id, off, n); err != nil {
			return
		}
	}
}

// answerSymm carries out one request of rank p; err ends the server (a
// link failed).
func (c *Communicator) answerSymm(p int, kind, id uint64, off, n int) error {
	wait, cancelWait := context.WithTimeout(c.ctx, c.opTimeout())
	w, werr := c.symmServe().window(wait, id)
	cancelWait()
	ctx, cancel := context.WithTimeout(c.ctx, c.opTimeout())
	defer cancel()
	var region []byte
	if werr == nil {
		if region, werr = w.Region(w.Rank()); werr == nil && (off < 0 || n < 0 || off > len(region) || n > len(region)-off) {
			werr = fmt.Errorf("bytes [%d, %d) are outside the region of %d bytes", off, off+n, len(region))
		}
	}
	status := make([]byte, 8)
	if werr != nil {
		status[0] = 1
	}
	switch kind {
	case symmPut:
		var into []byte
		if werr == nil {
			into = region[off : off+n]
		} else {
			into = make([]byte, n) // a refused put is still read off the link
		}
		if err := c.ep.Recv(ctx, p, symmRequestTag, into); err != nil {
			return err
		}
		return c.ep.Send(ctx, p, symmAnswerTag, status)
	case symmGet:
		if err := c.ep.Send(ctx, p, symmAnswerTag, status); err != nil || werr != nil {
			return err
		}
		return c.ep.Send(ctx, p, symmAnswerTag, region[off:off+n])
	case symmSignal:
		if werr == nil {
			_ = w.Deliver(p) // a closed window has no waiter left
		}
	}
	return nil
}

// opTimeout is the op timeout, or torch's default when none is set.
func (c *Communicator) opTimeout() time.Duration {
	if c.cfg.Timeout > 0 {
		return c.cfg.Timeout
	}
	return 5 * time.Minute
}

// request sends a request to rank, under rank's lock, and runs answer
// (still under it) to read what comes back.
func (r symmRemote) request(ctx context.Context, rank, kind, off int, payload []byte, n int, answer func() error) error {
	c := r.c
	if err := c.live(); err != nil {
		return err
	}
	lock := &c.symmServe().targets[rank]
	lock.Lock()
	defer lock.Unlock()
	header := make([]byte, symmHeaderBytes)
	binary.LittleEndian.PutUint64(header[0:], uint64(kind))
	binary.LittleEndian.PutUint64(header[8:], r.id)
	binary.LittleEndian.PutUint64(header[16:], uint64(off))
	binary.LittleEndian.PutUint64(header[24:], uint64(n))
	if err := c.ep.Send(ctx, rank, symmRequestTag, header); err != nil {
		return err
	}
	if payload != nil {
		if err := c.ep.Send(ctx, rank, symmRequestTag, payload); err != nil {
			return err
		}
	}
	if answer == nil {
		return nil
	}
	return answer()
}

// status reads a server's status word from rank.
func (r symmRemote) status(ctx context.Context, rank int) error {
	status := make([]byte, 8)
	if err := r.c.ep.Recv(ctx, rank, symmAnswerTag, status); err != nil {
		return err
	}
	if status[0] != 0 {
		return errSymmRefused
	}
	return nil
}

var errSymmRefused = errors.New("the target has no such symmetric allocation (freed, or its allocation failed) or the span is outside it")

func (r symmRemote) Put(ctx context.Context, rank, off int, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	return r.request(ctx, rank, symmPut, off, data, len(data), func() error { return r.status(ctx, rank) })
}

func (r symmRemote) Get(ctx context.Context, rank, off int, buf []byte) error {
	return r.request(ctx, rank, symmGet, off, nil, len(buf), func() error {
		if err := r.status(ctx, rank); err != nil {
			return err
		}
		return r.c.ep.Recv(ctx, rank, symmAnswerTag, buf)
	})
}

func (r symmRemote) Signal(ctx context.Context, rank int) error {
	return r.request(ctx, rank, symmSignal, 0, nil, 0, nil)
}

func (r symmRemote) Barrier(ctx context.Context) error {
	w, err := r.c.Barrier(StreamDefault)
	if err != nil {
		return err
	}
	return w.Wait(ctx, 0)
}

func (r symmRemote) Alive(int) error { return r.c.failure() }
