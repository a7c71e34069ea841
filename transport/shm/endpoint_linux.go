package shm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

// Endpoint is one rank's shared-memory links to the other ranks of its host.
// Send and Recv accept only those ranks (and the rank itself); route the
// others elsewhere (see package hybrid).
type Endpoint struct {
	rank, size int
	cfg        Config
	geom       geometry
	pidNS      uint64 // this process's PID namespace, 0 if unknown

	own   *segment
	hdr   header
	links []*link // by global rank; nil for self and for ranks on other hosts
	local []*link // the non-nil entries of links

	// token is held by whoever drains the inbox rings: a receiving
	// goroutine while it polls, or the reader goroutine.
	token   sync.Mutex
	pollers atomic.Int32 // receiving goroutines polling right now
	parked  atomic.Int32 // receiving goroutines asleep, waiting for the reader

	// mu guards the matcher (see match_linux.go).
	mu          sync.Mutex
	queues      map[key]*queue
	landings    map[*landing]struct{}
	peerErr     []error // why each peer's link failed, for receives
	matchClosed bool
	arrivals    uint64 // messages that arrived unexpected (message.seq)

	// life guards the mappings: operations that touch shared memory hold it
	// for reading; Close takes it for writing before unmapping.
	life      sync.RWMutex
	closed    atomic.Bool
	closedCh  chan struct{}
	closeOnce sync.Once
	closeErr  error

	readerWake    chan struct{} // capacity 1: a receiver stopped polling
	readerStarted atomic.Bool
	readerDone    chan struct{}

	// counters of single-copy transfers, for tests and benchmarks
	cmaSent, cmaReceived, cmaRefusals, cmaNacks atomic.Uint64

	// testAfterSlot, if set, runs after each published slot of a Send
	// (tests use it to stop a sender mid-message).
	testAfterSlot func(pos uint64)
}

var _ transport.Endpoint = (*Endpoint)(nil)

// link is everything about one peer on the host.
type link struct {
	rank  int
	idx   int // local index
	seg   *segment
	hdr   header
	out   *outRing // our ring in the peer's segment
	in    *inRing  // the peer's ring in our segment
	watch procWatch
	// watchPID is false for a peer in another PID namespace: the heartbeat
	// is watched instead.
	watchPID  bool
	samePidNS bool

	failure atomic.Pointer[error] // why the link is dead; set once by the reader
	// heartbeat bookkeeping, reader goroutine only
	lastBeat   uint64
	lastChange time.Time
}

// failed returns why the link is dead, or nil.
func (l *link) failed() error {
	if p := l.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// Connect joins the shared-memory group of the ranks in peers (global ranks
// of this host, including rank itself) of a communicator of size ranks.
// jobID must be the same on all of them and unique per communicator and
// generation: segment names derive from it. Connect returns once every
// rank of the host has mapped this rank's segment (which is then unlinked),
// or fails when ctx ends first.
func Connect(ctx context.Context, rank int, peers []int, size int, jobID string, cfg Config) (*Endpoint, error) {
	e, err := connect(ctx, rank, peers, size, jobID, cfg)
	if err != nil {
		return nil, err
	}
	e.startReader()
	return e, nil
}

// startReader starts the goroutine that drains the inbox. Tests delay it to
// play a receiver that does not keep up.
func (e *Endpoint) startReader() {
	e.readerStarted.Store(true)
	go e.readLoop()
}

// connect is Connect without starting the reader.
func connect(ctx context.Context, rank int, peers []int, size int, jobID string, cfg Config) (*Endpoint, error) {
	local, err := checkGroup(rank, peers, size, jobID)
	if err != nil {
		return nil, err
	}
	if cfg.Slots == 0 {
		cfg.Slots = defaultSlotsFor(len(local), cfg.SlotSize)
	}
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pidNS, _ := pidNamespace() // 0: unknown, peers are then watched by heartbeat
	e := &Endpoint{
		rank:       rank,
		size:       size,
		cfg:        cfg,
		geom:       geometry{nLocal: len(local), slots: cfg.Slots, slotSize: cfg.SlotSize},
		pidNS:      pidNS,
		links:      make([]*link, size),
		queues:     make(map[key]*queue),
		landings:   make(map[*landing]struct{}),
		peerErr:    make([]error, size),
		closedCh:   make(chan struct{}),
		readerWake: make(chan struct{}, 1),
		readerDone: make(chan struct{}),
	}
	if err := e.setup(ctx, jobID, local); err != nil {
		e.teardown()
		return nil, fmt.Errorf("shm connect rank %d: %w", rank, err)
	}
	return e, nil
}

// checkGroup validates the arguments of Connect and returns the host's
// ranks in ascending order (their order defines local indices).
func checkGroup(rank int, peers []int, size int, jobID string) ([]int, error) {
	if jobID == "" {
		return nil, errors.New("shm connect: empty job ID")
	}
	if size <= 0 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("shm connect: rank %d out of range [0, %d)", rank, size)
	}
	local := slices.Clone(peers)
	slices.Sort(local)
	for i, p := range local {
		if p < 0 || p >= size {
			return nil, fmt.Errorf("shm connect: peer rank %d out of range [0, %d)", p, size)
		}
		if i > 0 && local[i-1] == p {
			return nil, fmt.Errorf("shm connect: peer rank %d listed twice", p)
		}
	}
	if !slices.Contains(local, rank) {
		return nil, fmt.Errorf("shm connect: peers %v do not include rank %d", peers, rank)
	}
	return local, nil
}

// setup creates this rank's segment, maps every peer's, and waits until
// every peer has mapped ours.
func (e *Endpoint) setup(ctx context.Context, jobID string, local []int) error {
	myIdx := slices.Index(local, e.rank)
	seg, err := createSegment(segmentPath(e.cfg.Dir, jobID, e.rank), e.geom.segmentSize())
	if err != nil {
		return err
	}
	e.own = seg
	e.hdr = header{seg.mem}
	e.initHeader(myIdx)

	var badSecret error
	markUntil := time.Time{}
	for idx, r := range local {
		if r == e.rank {
			continue
		}
		path := segmentPath(e.cfg.Dir, jobID, r)
		if badSecret != nil {
			e.markRefused(ctx, path, markUntil)
			continue
		}
		l, err := e.attachPeer(ctx, path, r, idx)
		if errors.Is(err, ErrBadSecret) {
			// Tell every other peer before failing (a mark in its segment):
			// one that then finds ours gone learns why instead of waiting
			// out the timeout.
			badSecret, markUntil = err, time.Now().Add(markWait)
			for _, l := range e.local {
				e.refuse(l.hdr)
			}
			continue
		}
		if err != nil {
			return err
		}
		l.in = newInRing(r, newRing(e.own.mem, e.geom.ringOffset(myIdx, idx), e.geom))
		l.out = newOutRing(newRing(l.seg.mem, e.geom.ringOffset(idx, myIdx), e.geom))
		e.links[r] = l
		e.local = append(e.local, l)
	}
	if badSecret != nil {
		return badSecret
	}
	return e.awaitAttached(ctx)
}

// markWait bounds how long a rank that found another secret waits for the
// segments of peers it has not met, to mark them.
const markWait = 2 * time.Second

// markRefused marks the segment at path, once it is initialised, as
// refused by this rank; best effort, until the deadline.
func (e *Endpoint) markRefused(ctx context.Context, path string, deadline time.Time) {
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if seg, err := openSegment(path); err == nil {
			h := header{seg.mem}
			ready := h.magic().Load() == segMagic
			if ready {
				e.refuse(h)
			}
			_ = seg.unmap()
			if ready {
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// refuse marks a peer's segment header as refused by this rank (the first
// mark stays): the peer fails with ErrBadSecret instead of waiting.
func (e *Endpoint) refuse(h header) {
	h.refused().CompareAndSwap(0, uint32(e.rank+1))
}

// refusedError is the failure a peer's mark in this rank's segment says,
// or nil when none has marked it.
func (e *Endpoint) refusedError() error {
	by := int(e.hdr.refused().Load())
	if by == 0 {
		return nil
	}
	return &transport.PeerError{Peer: by - 1, Op: "connect",
		Err: fmt.Errorf("%w: rank %d found a segment of this host proving another secret", ErrBadSecret, by-1)}
}

// initHeader fills this rank's header and publishes it (magic last).
func (e *Endpoint) initHeader(myIdx int) {
	h := e.hdr
	h.setField(hVersion, segVersion)
	h.setField(hNLocal, uint64(e.geom.nLocal))
	h.setField(hLocalIdx, uint64(myIdx))
	h.setField(hSlots, uint64(e.geom.slots))
	h.setField(hSlotSize, uint64(e.geom.slotSize))
	h.setField(hPid, uint64(os.Getpid()))
	h.setField(hPidNS, e.pidNS)
	copy(h.proof(), e.cfg.Proof[:])
	h.heartbeat().Store(uint64(time.Now().UnixNano()))
	h.attach().Store(1) // our own mapping
	h.magic().Store(segMagic)
	if e.geom.nLocal == 1 {
		e.own.unlink()
	}
}

// attachPeer maps the segment of peer rank r (local index idx), retrying
// until it exists and is initialised by a live process.
func (e *Endpoint) attachPeer(ctx context.Context, path string, r, idx int) (*link, error) {
	delay := time.Millisecond
	for {
		l, err := e.tryAttach(path, r, idx)
		if l != nil || (err != nil && !errors.Is(err, errNotReady)) {
			return l, err
		}
		if err := e.refusedError(); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, &transport.PeerError{Peer: r, Op: "connect",
				Err: fmt.Errorf("segment %s never became ready: %w", path, ctx.Err())}
		case <-time.After(delay):
		}
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// tryAttach makes one attempt of attachPeer; errNotReady means try again.
func (e *Endpoint) tryAttach(path string, r, idx int) (*link, error) {
	seg, err := openSegment(path)
	if err != nil {
		return nil, err
	}
	l, err := e.checkPeerSegment(seg, r, idx)
	if err != nil {
		_ = seg.unmap()
		return nil, err
	}
	if int(l.hdr.attach().Add(1)) == e.geom.nLocal {
		seg.linked = true // we are the last to map it: nobody needs the name now
		seg.unlink()
	}
	return l, nil
}

// staleSeen, when set (tests only), is called each time checkPeerSegment
// finds a segment of a process that is gone.
var staleSeen func(r int)

// checkPeerSegment checks that a mapped peer segment is ready, has our
// geometry, and belongs to a live process.
func (e *Endpoint) checkPeerSegment(seg *segment, r, idx int) (*link, error) {
	h := header{seg.mem}
	if h.magic().Load() != segMagic || h.closed().Load() != 0 {
		return nil, errNotReady // not initialised yet, or left by a failed setup
	}
	want := map[int]uint64{
		hVersion: segVersion, hNLocal: uint64(e.geom.nLocal), hLocalIdx: uint64(idx),
		hSlots: uint64(e.geom.slots), hSlotSize: uint64(e.geom.slotSize),
	}
	for off, v := range want {
		if got := h.field(off); got != v {
			return nil, &transport.PeerError{Peer: r, Op: "connect",
				Err: fmt.Errorf("segment layout differs (field at %d: %d, want %d): same Slots, SlotSize and peers on every rank?", off, got, v)}
		}
	}
	if len(seg.mem) != e.geom.segmentSize() {
		return nil, &transport.PeerError{Peer: r, Op: "connect",
			Err: fmt.Errorf("segment is %d bytes, want %d", len(seg.mem), e.geom.segmentSize())}
	}
	if !bytes.Equal(h.proof(), e.cfg.Proof[:]) {
		e.refuse(h) // the peer may be waiting for us
		return nil, &transport.PeerError{Peer: r, Op: "connect",
			Err: fmt.Errorf("%w: rank %d's segment proves another secret than this rank's", ErrBadSecret, r)}
	}
	l := &link{rank: r, idx: idx, seg: seg, hdr: h, watch: procWatch{pidfd: -1}, lastChange: time.Now()}
	l.samePidNS = e.pidNS != 0 && h.field(hPidNS) == e.pidNS
	if l.samePidNS {
		w, err := watchProcess(int(h.field(hPid)))
		if err != nil {
			if staleSeen != nil {
				staleSeen(r)
			}
			return nil, errNotReady // left by a crashed run: its owner will replace it
		}
		l.watch, l.watchPID = w, true
	}
	return l, nil
}

// awaitAttached waits until every rank of the host has mapped our segment;
// the last of them unlinked it.
func (e *Endpoint) awaitAttached(ctx context.Context) error {
	for int(e.hdr.attach().Load()) < e.geom.nLocal {
		if err := e.refusedError(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d of %d local ranks to map our segment: %w",
				e.geom.nLocal-int(e.hdr.attach().Load()), e.geom.nLocal, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	e.own.linked = false // unlinked by the last peer to map it
	return nil
}

// Rank implements transport.Endpoint.
func (e *Endpoint) Rank() int { return e.rank }

// Size implements transport.Endpoint.
func (e *Endpoint) Size() int { return e.size }

// Close implements transport.Endpoint. Peers see it as this rank leaving:
// their operations involving it fail with a *transport.PeerError.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		close(e.closedCh)
		e.hdr.closed().Store(1)
		e.hdr.bell().Add(1)
		futex.WakeAll(e.hdr.bell()) // our reader
		select {
		case e.readerWake <- struct{}{}:
		default:
		}
		for _, l := range e.local {
			futex.WakeAll(l.out.r.spaceSeq()) // our senders sleeping on a full ring
		}
		e.token.Lock() // nobody is writing into a receive's buffer (see recvCMA)
		e.mu.Lock()
		e.closeMatcher()
		e.mu.Unlock()
		e.token.Unlock()
		if e.readerStarted.Load() {
			<-e.readerDone
		}
		e.life.Lock() // every operation touching the mappings has left
		defer e.life.Unlock()
		e.closeErr = e.teardown()
	})
	return e.closeErr
}

// teardown unmaps everything and removes our segment's name if it is still
// there. The caller ensures nothing uses the mappings.
func (e *Endpoint) teardown() error {
	var errs []error
	if e.own != nil {
		e.hdr.closed().Store(1) // a peer that mapped it sees us gone
		e.own.unlink()
		errs = append(errs, e.own.unmap())
	}
	for _, l := range e.links {
		if l != nil {
			l.watch.close()
			errs = append(errs, l.seg.unmap())
		}
	}
	return errors.Join(errs...)
}
