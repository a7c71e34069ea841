package streams

import "time"

// The inline grace: a granted operation waits a moment for its waiter to
// claim it (Work.RunInline) before a worker starts it. One timer per
// scheduler, not one per operation, keeps the count: arming a runtime
// timer wakes the thread parked in the network poller (an eventfd write
// and two context switches), which cost more than a small op itself. The
// timer stays armed while ops come and go; when it fires it starts the ops
// whose grace ran out unclaimed and re-arms for the next one due, if any.
//
// A claimed op leaves the timer armed when it is likely to be over before
// the timer fires (it ran about as long as the op before it): a loop of
// small synchronous ops then arms the timer about once per grace, not once
// per op, and the timer rarely fires with nothing to do. When the op is
// likely to outlast the timer, the claim stops it: firing in the middle of
// the op, the timer's goroutine would need a processor, and with
// GOMAXPROCS 1 it takes the op's own (a thread hand-off and back, each a
// wake-up on a busy host). A wrong guess costs one such firing, at most
// once per grace.

// inlineGrace is how long a newly granted operation waits for a waiter to
// claim it before a worker runs it: longer than the way back from issuing
// to waiting through C++ and Python (a few µs), short against any op whose
// issuer does not wait.
const inlineGrace = 30 * time.Microsecond

// Once syncStreak operations in a row were claimed by their waiters, the
// caller evidently waits on what it issues (a synchronous loop): the grace
// grows to syncGrace. A timer that fires costs the waiter a thread wake-up
// and a hand-off (~5 µs of a 15 µs op), and on 2 busy cores a 30 µs grace
// runs out often. The first op a worker has to start ends the streak, and
// an op whose waiter is already blocked (Work.Wait) never waits for grace.
const (
	syncStreak = 16
	syncGrace  = time.Millisecond
)

// grace is the current inline grace.
func (s *Scheduler) grace() time.Duration {
	if s.inlineStreak.Load() >= syncStreak {
		return s.cfg.SyncGrace
	}
	return s.cfg.InlineGrace
}

// claimedInline counts an operation claimed by its waiter.
func (s *Scheduler) claimedInline() {
	if s.inlineStreak.Load() < syncStreak {
		s.inlineStreak.Add(1)
	}
}

// armGraceLocked gives t, just granted at now, its grace: a worker starts
// it once that has passed unless a waiter claimed it first. A timer armed
// to fire earlier is left alone: it re-arms for t when it fires.
func (s *Scheduler) armGraceLocked(t *task, now time.Time) {
	t.graceDue = now.Add(s.grace())
	if !s.graceAt.IsZero() && !s.graceAt.After(t.graceDue) {
		return
	}
	s.resetGraceLocked(t.graceDue, now)
}

// resetGraceLocked makes the grace timer fire at due.
func (s *Scheduler) resetGraceLocked(due, now time.Time) {
	s.graceAt = due
	s.graceArms++
	s.graceTimer.Reset(due.Sub(now))
}

// graceExpired runs when the grace timer fires: it starts a worker for each
// granted op still unclaimed whose grace has run out (its caller is not,
// or no longer, synchronous: the streak ends) and re-arms for the next op
// due.
func (s *Scheduler) graceExpired() {
	now := s.clock.Now()
	var late []*task
	s.mu.Lock()
	s.graceAt = time.Time{}
	var next time.Time
	for _, st := range s.streams {
		t := st.running
		if t == nil || t.graceDue.IsZero() || t.claimed.Load() {
			continue
		}
		if now.Before(t.graceDue) {
			if next.IsZero() || t.graceDue.Before(next) {
				next = t.graceDue
			}
			continue
		}
		t.graceDue = time.Time{}
		late = append(late, t)
	}
	if !next.IsZero() && !s.stopping {
		s.resetGraceLocked(next, now)
	}
	s.mu.Unlock()
	for _, t := range late {
		if !t.claimed.Load() {
			s.inlineStreak.Store(0)
		}
		go s.work(t) // claims t, or finds it claimed and returns
	}
}

// claimedLocked follows the claim of an op (by its waiter or a worker)
// that starts at now: it stops the grace timer when no granted op waits
// for it any more and it would likely fire while the op runs.
func (s *Scheduler) claimedLocked(now time.Time) {
	if s.graceAt.IsZero() {
		return
	}
	if s.graceAt.Sub(now) > time.Duration(s.lastRun.Load()) {
		return // likely over before the timer fires: leave it armed
	}
	for _, st := range s.streams {
		if t := st.running; t != nil && !t.graceDue.IsZero() && !t.claimed.Load() {
			return
		}
	}
	s.graceTimer.Stop()
	s.graceAt = time.Time{}
}
