package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport"
)

// Lazy links (Config.Lazy): a rank links only with the peers it sends to
// or that send to it, when that first happens, so sockets per rank follow
// the algorithms' fan-out instead of the communicator's size.
//
// The rule of Connect stays: the higher rank of a pair dials, the lower
// accepts, with the same handshake. A higher rank's first Send to a peer
// dials it (every stream); a lower rank's rings the peer's doorbell first:
// an authenticated connection whose hello names doorbellStream, which the
// peer answers and closes, and then dials back. Until the link is up, a
// Send waits for it (within its context) and a Recv waits for the message
// as for any other. The listener stays open until Close.
//
// A link that cannot be made (the peer unreachable for UnreachableTimeout,
// a refused handshake, a different secret, ConnectTimeout passed) fails the
// peer for good, as a failed link does: every pending and later Send or
// Recv with it returns a *transport.PeerError naming it.

// doorbellStream is the stream number a doorbell's hello carries.
const doorbellStream = 0xFFFF

// lazyLinks makes an Endpoint's links on first use.
type lazyLinks struct {
	ep     *Endpoint
	s      *setup // accepts for the endpoint's life; its slots fill per peer
	l      *Listener
	addrs  []string
	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and the sessions

	mu      sync.Mutex
	ready   []chan struct{} // closed once the link to the peer is up or cannot be made
	settled []bool          // ready is closed
	started []bool          // a session has begun
	errs    []error         // why the link cannot be made
}

// connectLazy returns rank's endpoint with no link yet: it accepts on l
// from now on and links on first use.
func connectLazy(l *Listener, rank int, peerAddrs []string, cfg Config) (*Endpoint, error) {
	linked, err := checkAddrs(rank, peerAddrs, cfg, func(p int) bool { return p != rank })
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	size := len(peerAddrs)
	ctx, cancel := context.WithCancel(context.Background())
	e := newEndpoint(rank, size, cfg, nil, nil)
	z := &lazyLinks{
		ep: e, l: l, addrs: peerAddrs, ctx: ctx, cancel: cancel,
		ready: make([]chan struct{}, size), settled: make([]bool, size),
		started: make([]bool, size), errs: make([]error, size),
	}
	for p := range z.ready {
		z.ready[p] = make(chan struct{})
	}
	z.s = newSetup(rank, size, cfg, ctx, linked)
	z.s.onReady = z.linkUp
	z.s.onDoorbell = z.start
	e.lazy = z
	z.wg.Go(func() { z.s.acceptLoop(l) })
	return e, nil
}

// await returns the link to peer, starting a session to make it if none
// has begun, once it is up; or why it cannot be made.
func (z *lazyLinks) await(ctx context.Context, peer int) (*link, error) {
	z.start(peer)
	select {
	case <-z.ready[peer]:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the link to rank %d: %w", peer, context.Cause(ctx))
	}
	if l := z.ep.links[peer].Load(); l != nil {
		return l, nil
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	return nil, z.errs[peer]
}

// start begins a session for peer unless one has begun or the endpoint is
// closing. It is also how a doorbell is answered.
func (z *lazyLinks) start(peer int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.started[peer] || z.settled[peer] || z.ctx.Err() != nil {
		return
	}
	z.started[peer] = true
	z.wg.Go(func() { z.session(peer) }) // under mu: stop's Wait comes after every Go
}

// session makes the link to peer: dials it (this rank is the higher) or
// rings its doorbell and waits for it to dial back.
func (z *lazyLinks) session(peer int) {
	cfg := z.ep.cfg
	ctx, cancelTimeout := context.WithTimeoutCause(z.ctx, cfg.ConnectTimeout, errConnectTimeout)
	defer cancelTimeout()
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	var wg sync.WaitGroup
	if z.ep.rank > peer {
		for stream := range cfg.StreamsPerPeer {
			wg.Go(func() { z.s.dialLoop(ctx, abort, z.addrs[peer], peer, stream) })
		}
	} else {
		wg.Go(func() { z.ring(ctx, abort, peer) })
	}
	select {
	case <-z.ready[peer]:
	case <-ctx.Done():
	}
	cause := context.Cause(ctx)
	abort(nil)
	wg.Wait()
	if z.ep.links[peer].Load() != nil || z.ctx.Err() != nil {
		return
	}
	if err := z.s.lastErr(peer); err != nil && !errors.Is(cause, errHandshakeRefused) && !errors.Is(cause, errBadAuth) && !errors.Is(cause, ErrUnreachable) {
		cause = fmt.Errorf("%w (last attempt: %w)", cause, err)
	}
	advice := ""
	if cfg.Advice != nil {
		advice = cfg.Advice(cause)
	}
	z.fail(peer, &transport.PeerError{Peer: peer, Op: "connect",
		Err: fmt.Errorf("rank %d has no link to rank %d: %w%s", z.ep.rank, peer, cause, advice)})
}

// ring asks peer (a higher rank) to dial this one, retrying until a
// doorbell handshake succeeds, the peer refuses for good, or its address
// is settled unreachable (both abort the session); then it watches the
// peer's address until the link is up.
func (z *lazyLinks) ring(ctx context.Context, abort context.CancelCauseFunc, peer int) {
	s, addr := z.s, z.addrs[peer]
	d := net.Dialer{Timeout: s.cfg.UnreachableTimeout}
	backoff := minDialBackoff
	for ctx.Err() == nil {
		start := time.Now()
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil && ctx.Err() == nil {
			s.setErr(peer, fmt.Errorf("ring rank %d at %s: %w", peer, addr, err))
			if s.dialFailed(abort, start, err, addr, peer) {
				return
			}
		}
		if err == nil {
			s.reach[peer].succeeded()
			_, err = s.dialHandshake(ctx, conn, peer, doorbellStream)
			_ = conn.Close()
			if err == nil {
				// The peer dials back. Watch its address meanwhile: a peer
				// that closes before its dials land refuses connections.
				s.probeLoop(ctx, abort, addr, peer)
				return
			}
			if errors.Is(err, errHandshakeRefused) || errors.Is(err, errBadAuth) {
				abort(fmt.Errorf("rank %d at %s: %w", peer, addr, err))
				return
			}
			s.setErr(peer, fmt.Errorf("ring rank %d at %s: %w", peer, addr, err))
		}
		backoff = waitBackoff(ctx, backoff)
	}
}

// linkUp makes the link to peer once every stream to it is filled.
func (z *lazyLinks) linkUp(peer int, conns []*net.TCPConn, maxFrame int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.ctx.Err() != nil || z.settled[peer] { // closing, or given up on
		for _, c := range conns {
			_ = c.Close()
		}
		return
	}
	z.ep.addLink(peer, conns, maxFrame)
	z.settled[peer] = true
	close(z.ready[peer])
}

// fail settles peer's link as impossible: its pending and later Sends and
// Recvs fail with err.
func (z *lazyLinks) fail(peer int, err error) {
	z.mu.Lock()
	if z.settled[peer] {
		z.mu.Unlock()
		return
	}
	z.errs[peer], z.settled[peer] = err, true
	close(z.ready[peer])
	z.mu.Unlock()
	z.s.dropPeer(peer)
	z.ep.cfg.Logf("hccl-go tcp: rank %d: %v", z.ep.rank, err)
	z.ep.box.FailPeer(peer, err)
}

// stop ends accepting and every session; afterwards no link is made and
// every Send waiting for one returns transport.ErrClosed.
func (z *lazyLinks) stop() {
	z.mu.Lock()
	z.cancel()
	z.mu.Unlock()
	_ = z.l.Close()
	z.s.closePending()
	z.wg.Wait()
	z.mu.Lock()
	defer z.mu.Unlock()
	for p := range z.ready {
		if !z.settled[p] {
			z.errs[p], z.settled[p] = transport.ErrClosed, true
			close(z.ready[p])
		}
	}
}
