package shm

import (
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

const (
	// pollerCheck is how often the reader looks again while receivers
	// drain the rings themselves.
	pollerCheck = time.Millisecond
	// unexpectedDelay is how long the reader leaves a message that nobody
	// waits for in its ring, for a receive to come and take it straight
	// into its buffer, before storing it (unless the ring fills up).
	unexpectedDelay = 50 * time.Microsecond
)

// readLoop is the reader goroutine: it drains the inbox rings when no
// receiving goroutine does (receives that went to sleep, messages nobody
// waits for, a ring filling up), and watches the peers. It never spins:
// when there is nothing to do it sleeps on the doorbell futex, which senders
// ring only when it announced that it sleeps. While receivers poll, or
// while it lets young messages wait, it stays off the doorbell, so that
// senders make no system calls.
func (e *Endpoint) readLoop() {
	defer close(e.readerDone)
	nextCheck := time.Now().Add(e.cfg.LivenessInterval)
	timer := time.NewTimer(pollerCheck)
	defer timer.Stop()
	var y futex.Yielder
	for !e.closed.Load() {
		now := time.Now()
		check := !now.Before(nextCheck)
		if check {
			nextCheck = now.Add(e.cfg.LivenessInterval)
		}
		if e.pollers.Load() > 0 {
			if check {
				e.token.Lock()
				e.checkPeers(now)
				e.token.Unlock()
			}
			timer.Reset(pollerCheck)
			select {
			case <-e.readerWake:
			case <-timer.C:
			}
			continue
		}
		e.token.Lock()
		drain, young := e.shouldDrain(now)
		worked, deferred := false, false
		if drain {
			worked, deferred = e.pollAll(nil)
		}
		if check {
			e.checkPeers(now)
		}
		e.token.Unlock()
		switch {
		case worked || deferred:
			y.Yield() // let a receiver we just completed, or the one awaited, run
		case young:
			// Off the doorbell: senders need not wake us for these.
			_ = futex.Wait(e.hdr.bell(), e.hdr.bell().Load(), unexpectedDelay)
		default:
			e.sleep(time.Until(nextCheck))
		}
	}
}

// shouldDrain tells the reader whether to drain the rings now: when a
// receive sleeps, a ring is half full, or a message has waited for its
// receive for unexpectedDelay. young reports messages left to wait. The
// caller holds token.
func (e *Endpoint) shouldDrain(now time.Time) (drain, young bool) {
	if e.parked.Load() > 0 {
		return true, false
	}
	for _, l := range e.local {
		ir := l.in
		if ir.dead || slotFlag(ir.r.slot(ir.pos)).Load() != ir.pos+1 {
			continue
		}
		half := ir.pos + uint64(ir.r.slots/2)
		if slotFlag(ir.r.slot(half)).Load() == half+1 {
			return true, false
		}
		if ir.readySince.IsZero() {
			ir.readySince = now
		}
		if now.Sub(ir.readySince) >= unexpectedDelay {
			return true, false
		}
		young = true
	}
	return false, young
}

// wakeReader makes the reader drain the rings again soon.
func (e *Endpoint) wakeReader() {
	select {
	case e.readerWake <- struct{}{}:
	default:
	}
	e.life.RLock()
	defer e.life.RUnlock()
	if !e.closed.Load() {
		ringBell(e.hdr.waiters(), e.hdr.bell())
	}
}

// sleep waits on the doorbell for at most d, unless there is work already.
func (e *Endpoint) sleep(d time.Duration) {
	bell, waiters := e.hdr.bell(), e.hdr.waiters()
	v := bell.Load()
	waiters.Store(1)
	defer waiters.Store(0)
	if e.closed.Load() || e.pollers.Load() > 0 || !e.token.TryLock() {
		return
	}
	ready := e.anyReady()
	e.token.Unlock()
	if ready {
		return
	}
	// An error here is impossible for a live mapping; the loop would
	// notice anything else on its next pass.
	_ = futex.Wait(bell, v, d)
}

// anyReady reports whether a ring has a published slot. The caller holds
// token.
func (e *Endpoint) anyReady() bool {
	for _, l := range e.local {
		ir := l.in
		if !ir.dead && slotFlag(ir.r.slot(ir.pos)).Load() == ir.pos+1 {
			return true
		}
	}
	return false
}

// checkPeers publishes our heartbeat and fails the links of peers that
// closed, died, went silent or aborted their ring. The caller holds token.
func (e *Endpoint) checkPeers(now time.Time) {
	e.hdr.heartbeat().Store(uint64(now.UnixNano()))
	for _, l := range e.local {
		if l.failed() != nil {
			continue
		}
		var cause error
		switch {
		case l.hdr.closed().Load() != 0:
			cause = errPeerClosed
		case l.watchPID && !l.watch.alive():
			cause = errProcessGone
		case !l.watchPID && e.heartbeatStale(l, now):
			cause = fmt.Errorf("peer heartbeat stopped for over %v", e.cfg.HeartbeatTimeout)
		case l.in.r.aborted().Load() != 0:
			cause = errLinkAborted
		}
		if cause != nil {
			e.failPeer(l, cause, true)
		}
	}
}

// heartbeatStale reports whether l's heartbeat has not moved for longer than
// the heartbeat timeout.
func (e *Endpoint) heartbeatStale(l *link, now time.Time) bool {
	if hb := l.hdr.heartbeat().Load(); hb != l.lastBeat {
		l.lastBeat, l.lastChange = hb, now
		return false
	}
	return now.Sub(l.lastChange) > e.cfg.HeartbeatTimeout
}

// failPeer declares the link to l dead: receives waiting on it and later
// ones fail, and so do sends. With drain, the messages l completed before
// are delivered first (not after a ring error: the ring is garbage then).
// The caller holds token.
func (e *Endpoint) failPeer(l *link, cause error, drain bool) {
	if l.failed() != nil {
		return
	}
	// Bounded: a live but silent peer could otherwise keep us here.
	for i := 0; drain && i < 2*l.in.r.slots; i++ {
		if n, err := e.pollRing(l, 1, nil); n == 0 || err != nil {
			break
		}
	}
	l.failure.Store(&cause)
	l.in.dead = true
	l.in.cur = nil
	e.mu.Lock()
	e.failPeerLocked(l.rank, &transport.PeerError{Peer: l.rank, Op: "recv", Err: cause})
	e.mu.Unlock()
	futex.WakeAll(l.out.r.spaceSeq()) // our senders blocked on its full ring
}
