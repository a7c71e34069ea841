package shm

import (
	"fmt"
	"runtime"
	"time"
)

// readLoop is the reader goroutine: it drains every inbox ring into the
// matcher and watches the peers. Like every waiter it spins, then yields,
// then sleeps on the doorbell futex; senders ring the bell only when it
// announced that it sleeps. A new Recv restarts the spinning, since its
// message is probably on the way.
func (e *Endpoint) readLoop() {
	defer close(e.readerDone)
	now := time.Now()
	lastWork := now
	nextCheck := now.Add(e.cfg.LivenessInterval)
	posts := e.recvPosts.Load()
	for !e.closed.Load() {
		worked := e.pollAll()
		now = time.Now()
		if !now.Before(nextCheck) {
			e.checkPeers(now)
			nextCheck = now.Add(e.cfg.LivenessInterval)
		}
		if worked {
			lastWork = now
			runtime.Gosched() // let a receiver we just completed run
			continue
		}
		if p := e.recvPosts.Load(); p != posts {
			posts, lastWork = p, now
		}
		idle := now.Sub(lastWork)
		if idle < e.cfg.SpinTime {
			continue
		}
		if idle < e.cfg.SpinTime+e.cfg.YieldTime {
			runtime.Gosched()
			continue
		}
		if e.sleep(nextCheck.Sub(now), posts) {
			lastWork = time.Now()
		}
	}
}

// pollAll drains what is ready in every ring and reports whether anything
// was.
func (e *Endpoint) pollAll() bool {
	worked := false
	for _, l := range e.local {
		if l.in.dead {
			continue
		}
		n, err := e.pollRing(l, 16)
		if err != nil {
			e.failPeer(l, err)
		}
		worked = worked || n > 0
	}
	return worked
}

// sleep waits on the doorbell for at most d and reports whether it was rung
// (or there is something to do at once).
func (e *Endpoint) sleep(d time.Duration, posts uint64) bool {
	bell, waiters := e.hdr.bell(), e.hdr.waiters()
	v := bell.Load()
	waiters.Store(1)
	defer waiters.Store(0)
	if e.anyReady() || e.closed.Load() || e.recvPosts.Load() != posts {
		return true
	}
	// An error here is impossible for a live mapping; the loop would
	// notice anything else on its next pass.
	_ = futexWait(bell, v, d)
	return bell.Load() != v
}

// anyReady reports whether a ring has a published slot.
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
// closed, died, went silent or aborted their ring.
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
			e.failPeer(l, cause)
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

// failPeer declares the link to l dead: what l completed before is still
// delivered, receives waiting on it and later ones fail, and so do sends.
func (e *Endpoint) failPeer(l *link, cause error) {
	if l.failed() != nil {
		return
	}
	// Drain the messages the peer finished (bounded: a live but silent
	// peer could otherwise keep us here).
	for range 2 * l.in.r.slots {
		if n, err := e.pollRing(l, 1); n == 0 || err != nil {
			break
		}
	}
	l.failure.Store(&cause)
	l.in.dead = true
	e.box.FailPeer(l.rank, cause)
	futexWakeAll(l.out.r.spaceSeq()) // our senders blocked on its full ring
}
