package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// ErrUnreachable marks a Connect that gave up early because a peer's
// advertised address did not take TCP connections for
// Config.UnreachableTimeout, or stopped taking them before the peer linked
// with this rank (it gave up or exited).
var ErrUnreachable = errors.New("peer address unreachable")

// Every rank opens its listener before its address is published, so a
// connection to an address taken from the rendezvous is answered by the
// kernel at once, however late the peer itself calls Connect. An address
// that refuses connections, has no route or does not answer is therefore
// wrong (or its rank has failed), and Connect says so within
// UnreachableTimeout instead of retrying for the whole ConnectTimeout.
//
// A rank dials only the ranks below it. To learn in time that a rank above
// cannot reach it (and has given up), it probes the addresses of the ranks
// above that have not linked with it yet: a bare TCP connection, closed at
// once. A probe that connects means the peer's listener is still open (it
// is alive, perhaps still dialing); a probe that fails the same way as a
// dial counts the same way.
const (
	maxFirstProbe    = time.Second
	maxProbeInterval = 500 * time.Millisecond
)

// reachVerdict is what the attempts on one address so far say.
type reachVerdict int

const (
	keepTrying  reachVerdict = iota
	unreachable              // every attempt failed for UnreachableTimeout
	gaveUp                   // it took connections before and now refuses them
)

// reach follows one peer's advertised address during setup.
type reach struct {
	mu       sync.Mutex
	answered bool      // some TCP connection to it succeeded
	failing  time.Time // start of the first attempt of the current run of failures; zero while none
}

func (r *reach) succeeded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answered, r.failing = true, time.Time{}
}

// failed records an attempt, started at start, that got no TCP connection
// by now.
func (r *reach) failed(start, now time.Time, err error, window time.Duration, refusedIsFinal bool) reachVerdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	if (r.answered || refusedIsFinal) && errors.Is(err, syscall.ECONNREFUSED) {
		// Its listener was open and is closed now: its Connect has ended
		// without this link.
		return gaveUp
	}
	if r.failing.IsZero() {
		r.failing = start
	}
	if now.Sub(r.failing) >= window {
		return unreachable
	}
	return keepTrying
}

// dialFailed records a dial of link (peer, stream) that got no TCP
// connection and aborts the setup when the address is settled unreachable.
// It reports whether the setup was aborted.
func (s *setup) dialFailed(abort context.CancelCauseFunc, start time.Time, err error, addr string, peer int) bool {
	// A lazy link's peer listens for as long as its endpoint lives: a refusal
	// means it has closed or exited.
	switch s.reach[peer].failed(start, time.Now(), err, s.cfg.UnreachableTimeout, s.onReady != nil) {
	case gaveUp:
		if s.onReady != nil {
			abort(fmt.Errorf("%w: rank %d's listener at %s refuses connections: rank %d has closed its endpoint or exited", ErrUnreachable, peer, addr, peer))
			return true
		}
		abort(fmt.Errorf("%w: rank %d's listener at %s took connections before and now refuses them: rank %d gave up or exited (its own error says why)", ErrUnreachable, peer, addr, peer))
		return true
	case unreachable:
		abort(fmt.Errorf("%w: cannot reach rank %d at %s: every attempt for %v failed (last: %w)", ErrUnreachable, peer, addr, s.cfg.UnreachableTimeout, err))
		return true
	}
	return false
}

// probeLoop watches the address of peer, a rank above this one, until
// every link with it has been taken (reserved by its handshake), the setup
// ends, or the address is settled unreachable (which aborts the setup).
func (s *setup) probeLoop(ctx context.Context, abort context.CancelCauseFunc, addr string, peer int) {
	w := s.cfg.UnreachableTimeout
	d := net.Dialer{Timeout: w}
	wait := min(maxFirstProbe, w)
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !s.awaiting(peer) {
			return
		}
		start := time.Now()
		conn, err := d.DialContext(ctx, "tcp", addr)
		if ctx.Err() != nil {
			if conn != nil {
				_ = conn.Close()
			}
			return
		}
		if err == nil {
			_ = conn.Close()
			s.reach[peer].succeeded()
		} else {
			v := s.reach[peer].failed(start, time.Now(), err, w, false)
			// A peer whose dial did not prove the secret and whose listener
			// now takes no connections has given up on this rank: say so at
			// once. (A stranger's claim alone aborts nothing.)
			if from := s.badSecretFrom(peer); from != "" && s.awaiting(peer) {
				abort(fmt.Errorf("%w: rank %d has not linked with this rank: a connection from %s claiming to be rank %d did not prove this rank's secret, and rank %d's listener at %s now takes no connections (%v)", ErrBadSecret, peer, from, peer, peer, addr, err))
				return
			}
			// The peer may have linked with this rank meanwhile, and then
			// closed its listener because it is done.
			if v != keepTrying && s.awaiting(peer) {
				if v == gaveUp {
					abort(fmt.Errorf("%w: rank %d has not linked with this rank, and its listener at %s, which took connections before, now refuses them: rank %d gave up or exited (its own error says why)", ErrUnreachable, peer, addr, peer))
				} else {
					abort(fmt.Errorf("%w: rank %d has not linked with this rank, and its address %s takes no connections from here: every attempt for %v failed (last: %w)", ErrUnreachable, peer, addr, w, err))
				}
				return
			}
		}
		wait = max(min(maxProbeInterval, w/2), minDialBackoff)
	}
}

// awaiting reports whether some link with peer has not been taken by a
// handshake yet.
func (s *setup) awaiting(peer int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reserved[peer] {
		if !r {
			return true
		}
	}
	return false
}

// noteBadSecret records that a connection from addr claimed to be peer and
// did not prove the secret.
func (s *setup) noteBadSecret(peer int, addr string) {
	if peer < 0 || peer >= s.size || peer == s.rank {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.badSecret[peer] = addr
}

// badSecretFrom returns the address of a connection that claimed to be peer
// and did not prove the secret, "" if none did.
func (s *setup) badSecretFrom(peer int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.badSecret[peer]
}
