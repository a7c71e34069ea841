package tcp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport"
)

// maxPendingHandshakes bounds the accepted connections handshaking at once,
// so that a flood of strangers cannot exhaust goroutines or sockets.
const maxPendingHandshakes = 64

// pendingGrace is how long handshakes still running when Connect's setup
// ends may take to finish (endPending).
const pendingGrace = time.Second

// Dial retry backoff: a peer's listener may not be accepting yet.
const (
	minDialBackoff = 10 * time.Millisecond
	maxDialBackoff = 500 * time.Millisecond
)

// keepAlive detects a vanished host (no FIN, no RST) within 25-35 s.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3}

// keepAliveJitter spreads the first probe of each connection over this much
// beyond keepAlive.Idle. A communicator's links mostly go idle at the same
// moment (the end of setup; most links carry nothing while its algorithms
// use a few), so without it every link's probes leave in the same tick, each
// retry too: at 128 ranks on one machine (8,128 loopback links) those bursts
// overflowed the kernel's input backlog (net.core.netdev_max_backlog) and
// links were declared dead after three lost probes.
const keepAliveJitter = 10 * time.Second

// keepAliveFor is keepAlive with the first probe at a random point of the
// jitter window.
func keepAliveFor() net.KeepAliveConfig {
	c := keepAlive
	c.Idle += time.Duration(rand.Int64N(int64(keepAliveJitter)))
	return c
}

var errConnectTimeout = errors.New("connection setup timed out")

// Connect builds rank's endpoint of a communicator whose ranks listen at
// peerAddrs (peerAddrs[i] is rank i's Listener.Addr; this rank's own entry is
// not used). Rank i dials every rank below it and accepts connections from
// every rank above it on l; dials are retried with backoff until
// cfg.ConnectTimeout or ctx ends, except that an address that takes no TCP
// connection for cfg.UnreachableTimeout ends the setup with an error
// wrapping ErrUnreachable (see reach.go). Connections that fail the
// handshake are closed and logged without failing the setup. Connect takes
// ownership of l and closes it when it returns.
func Connect(ctx context.Context, l *Listener, rank int, peerAddrs []string, cfg Config) (transport.Endpoint, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("tcp connect: %w", err)
	}
	if cfg.Lazy {
		return connectLazy(l, rank, peerAddrs, cfg)
	}
	defer l.Close()
	size := len(peerAddrs)
	linked, err := checkAddrs(rank, peerAddrs, cfg, func(p int) bool { return p < rank })
	if err != nil {
		return nil, err
	}
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, cfg.ConnectTimeout, errConnectTimeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	s := newSetup(rank, size, cfg, ctx, linked)
	var wg sync.WaitGroup
	wg.Go(func() { s.acceptLoop(l) })
	for peer := range rank {
		if !linked(peer) {
			continue
		}
		for stream := range cfg.StreamsPerPeer {
			wg.Go(func() { s.dialLoop(ctx, cancel, peerAddrs[peer], peer, stream) })
		}
	}
	for peer := rank + 1; peer < size; peer++ {
		if linked(peer) && peerAddrs[peer] != "" {
			wg.Go(func() { s.probeLoop(ctx, cancel, peerAddrs[peer], peer) })
		}
	}

	select {
	case <-s.complete:
	case <-ctx.Done():
	}
	// Stop accepting and dialing, give strangers still handshaking a moment
	// to be refused, and wait for every setup goroutine before deciding.
	_ = l.Close()
	cancel(nil)
	s.endPending(pendingGrace)
	wg.Wait()

	if missing := s.missing(); len(missing) > 0 {
		s.closeAll()
		cause := context.Cause(ctx)
		if err := s.lastErr(missing[0]); err != nil && !errors.Is(cause, errHandshakeRefused) && !errors.Is(cause, errBadAuth) && !errors.Is(cause, ErrUnreachable) {
			cause = fmt.Errorf("%w (last attempt: %w)", cause, err)
		}
		return nil, &transport.PeerError{Peer: missing[0], Op: "connect",
			Err: fmt.Errorf("rank %d has no link to ranks %v: %w", rank, missing, cause)}
	}
	return newEndpoint(rank, size, cfg, s.conns, s.maxFrame), nil
}

// checkAddrs checks rank and cfg.Unlinked against the addresses and that
// every linked peer this rank dials (dials(p)) has one; it returns which
// peers are linked.
func checkAddrs(rank int, peerAddrs []string, cfg Config, dials func(p int) bool) (func(p int) bool, error) {
	size := len(peerAddrs)
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("tcp connect: rank %d not in [0, %d)", rank, size)
	}
	if cfg.Unlinked != nil && len(cfg.Unlinked) != size {
		return nil, fmt.Errorf("tcp connect: Unlinked lists %d ranks for %d", len(cfg.Unlinked), size)
	}
	linked := func(p int) bool { return p != rank && (cfg.Unlinked == nil || !cfg.Unlinked[p]) }
	for p, a := range peerAddrs {
		if dials(p) && linked(p) && a == "" {
			return nil, fmt.Errorf("tcp connect: no address for rank %d", p)
		}
	}
	return linked, nil
}

// setup collects the connections of one Connect call.
type setup struct {
	rank, size int
	cfg        Config
	deadline   time.Time
	complete   chan struct{} // closed when every link slot is filled
	linked     func(peer int) bool

	mu       sync.Mutex
	conns    [][]*net.TCPConn // [peer][stream]; nil until established
	reserved [][]bool         // slot taken by an accepted handshake
	maxFrame []int            // each peer's announced frame bound
	need     int              // slots still empty
	errs     []error          // last dial error per peer
	reach    []reach          // per peer: does its advertised address take connections
	pending  map[net.Conn]struct{}
	ending   time.Time // once Connect's setup has ended: the pending handshakes' bound
	// badSecret is, per peer, the address of a connection that claimed to
	// be it and did not prove the secret ("" if none): the likeliest cause
	// when that peer then never links.
	badSecret []string

	// Lazy links (lazy.go) only: onReady receives a peer's connections once
	// every stream to it is filled, and onDoorbell the lower ranks that ask
	// this one to dial them. Both nil for Connect's one-off setup.
	onReady    func(peer int, conns []*net.TCPConn, maxFrame int)
	onDoorbell func(peer int)
}

func newSetup(rank, size int, cfg Config, ctx context.Context, linked func(peer int) bool) *setup {
	s := &setup{
		rank:      rank,
		size:      size,
		cfg:       cfg,
		linked:    linked,
		complete:  make(chan struct{}),
		conns:     make([][]*net.TCPConn, size),
		reserved:  make([][]bool, size),
		maxFrame:  make([]int, size),
		errs:      make([]error, size),
		reach:     make([]reach, size),
		badSecret: make([]string, size),
		pending:   make(map[net.Conn]struct{}),
	}
	s.deadline, _ = ctx.Deadline()
	for p := range size {
		if linked(p) {
			s.conns[p] = make([]*net.TCPConn, cfg.StreamsPerPeer)
			s.reserved[p] = make([]bool, cfg.StreamsPerPeer)
			s.need += cfg.StreamsPerPeer
		}
	}
	if s.need == 0 {
		close(s.complete)
	}
	return s
}

// handshakeDeadline bounds one accepted handshake.
func (s *setup) handshakeDeadline() time.Time {
	d := time.Now().Add(s.cfg.HandshakeTimeout)
	if !s.deadline.IsZero() && d.After(s.deadline) {
		d = s.deadline
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ending.IsZero() && d.After(s.ending) {
		d = s.ending
	}
	return d
}

// acceptLoop accepts until l is closed, handshaking each connection in its
// own goroutine.
func (s *setup) acceptLoop(l *Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.cfg.Logf("hccl-go tcp: rank %d: accept: %v", s.rank, err)
			time.Sleep(minDialBackoff) // e.g. out of file descriptors
			continue
		}
		if !s.addPending(conn) {
			s.cfg.Logf("hccl-go tcp: rank %d: refused connection from %s: too many pending handshakes", s.rank, conn.RemoteAddr())
			_ = conn.Close()
			continue
		}
		wg.Go(func() { s.serve(conn) })
	}
}

// serve handshakes one accepted connection and files it, or closes it.
func (s *setup) serve(conn *net.TCPConn) {
	p, err := s.acceptHandshake(conn)
	if err == nil && p.stream == doorbellStream {
		s.dropPending(conn)
		_ = conn.Close()
		s.onDoorbell(p.rank)
		return
	}
	if err == nil {
		err = tune(conn)
	}
	if err == nil && s.fill(p.rank, p.stream, conn, p.maxFrame) {
		return
	}
	s.dropPending(conn)
	_ = conn.Close()
	// Probes say nothing, and a handshake cut because the setup ended
	// (closePending) was not refused.
	if err != nil && !errors.Is(err, errProbe) && !errors.Is(err, net.ErrClosed) {
		s.cfg.Logf("hccl-go tcp: rank %d: refused connection from %s: %v", s.rank, conn.RemoteAddr(), err)
	}
}

// dialLoop establishes link (peer, stream), retrying until it succeeds, the
// setup ends, or the peer refuses for good or its address is settled
// unreachable (either of which aborts the setup).
func (s *setup) dialLoop(ctx context.Context, abort context.CancelCauseFunc, addr string, peer, stream int) {
	d := net.Dialer{KeepAliveConfig: keepAliveFor(), Timeout: s.cfg.UnreachableTimeout}
	backoff := minDialBackoff
	for ctx.Err() == nil {
		start := time.Now()
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil && ctx.Err() == nil {
			s.setErr(peer, fmt.Errorf("dial rank %d at %s: %w", peer, addr, err))
			if s.dialFailed(abort, start, err, addr, peer) {
				return
			}
		}
		if err == nil {
			s.reach[peer].succeeded()
			tc := conn.(*net.TCPConn)
			var maxFrame int
			maxFrame, err = s.dialHandshake(ctx, tc, peer, stream)
			if err == nil {
				err = tune(tc)
			}
			if err == nil && s.fill(peer, stream, tc, maxFrame) {
				return
			}
			_ = conn.Close()
			if errors.Is(err, errHandshakeRefused) || errors.Is(err, errBadAuth) {
				abort(fmt.Errorf("rank %d at %s: %w", peer, addr, err))
				return
			}
			if err != nil {
				s.setErr(peer, fmt.Errorf("handshake with rank %d at %s: %w", peer, addr, err))
			}
		}
		backoff = waitBackoff(ctx, backoff)
	}
}

// waitBackoff waits d or until ctx ends, and returns the next retry's wait.
func waitBackoff(ctx context.Context, d time.Duration) time.Duration {
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	return min(2*d, maxDialBackoff)
}

// tune sets the socket options every link uses.
func tune(c *net.TCPConn) error {
	if err := c.SetNoDelay(true); err != nil {
		return fmt.Errorf("set TCP_NODELAY: %w", err)
	}
	if err := c.SetKeepAliveConfig(keepAliveFor()); err != nil {
		return fmt.Errorf("set keepalive: %w", err)
	}
	return nil
}

func (s *setup) addPending(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= maxPendingHandshakes {
		return false
	}
	s.pending[c] = struct{}{}
	return true
}

func (s *setup) dropPending(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, c)
}

// endPending bounds the handshakes still running when Connect's setup ends
// by grace: one whose hello is already queued (a stranger that sent it with
// its connection) still gets its refusal rather than a reset, and one that
// stalls is cut when grace runs out. Handshakes accepted later get the same
// bound (handshakeDeadline).
func (s *setup) endPending(grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ending = time.Now().Add(grace)
	for c := range s.pending {
		_ = c.SetDeadline(s.ending)
	}
}

// closePending cuts handshakes still running when lazy links stop.
func (s *setup) closePending() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.pending {
		_ = c.Close()
	}
}

// reserve claims slot (peer, stream) for an accepted connection; false if it
// is taken.
func (s *setup) reserve(peer, stream int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserved[peer][stream] {
		return false
	}
	s.reserved[peer][stream] = true
	return true
}

func (s *setup) unreserve(peer, stream int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved[peer][stream] = false
}

// fill files an established connection (no longer pending, so that the end
// of the setup does not close it). It reports false when the slot is taken,
// in which case the caller closes conn.
func (s *setup) fill(peer, stream int, conn *net.TCPConn, maxFrame int) bool {
	s.mu.Lock()
	delete(s.pending, conn)
	select {
	case <-s.complete:
		s.mu.Unlock()
		return false
	default:
	}
	if s.conns[peer][stream] != nil {
		s.mu.Unlock()
		return false
	}
	s.conns[peer][stream] = conn
	s.maxFrame[peer] = maxFrame
	s.need--
	if s.need == 0 {
		close(s.complete)
	}
	var up []*net.TCPConn // the peer's streams, once all are filled (lazy links)
	if s.onReady != nil && !slices.Contains(s.conns[peer], nil) {
		up = slices.Clone(s.conns[peer])
	}
	s.mu.Unlock()
	if up != nil {
		s.onReady(peer, up, maxFrame)
	}
	return true
}

func (s *setup) setErr(peer int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs[peer] = err
}

func (s *setup) lastErr(peer int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errs[peer]
}

// missing lists the peers with at least one link not established.
func (s *setup) missing() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for p, streams := range s.conns {
		for _, c := range streams {
			if c == nil {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// dropPeer closes the connections filed for peer's link, which will not
// be made (lazy links), and keeps later ones out.
func (s *setup) dropPeer(peer int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.conns[peer] {
		if c != nil {
			_ = c.Close()
		}
		s.conns[peer][i] = nil
		s.reserved[peer][i] = true
	}
}

func (s *setup) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, streams := range s.conns {
		for _, c := range streams {
			if c != nil {
				_ = c.Close()
			}
		}
	}
}
