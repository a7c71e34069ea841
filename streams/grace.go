package streams

import "time"

// The inline grace: a granted operation waits a moment for its waiter to
// claim it (Work.RunInline) before a worker starts it. One timer per
// scheduler, not one per operation, keeps the count: arming a runtime
// timer wakes the thread parked in the network poller (an eventfd write
// and two context switches), which cost more than a small op itself. The
// timer stays armed while ops come and go; when it fires it starts the ops
// whose grace ran out unclaimed and re-arms for the next one due, if any.

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

// armGrace gives t, granted and unclaimed, its grace: a worker starts it
// once that has passed unless a waiter claimed it first.
func (s *Scheduler) armGrace(t *task) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !t.granted || t.claimed.Load() || s.stopping {
		return
	}
	t.graceDue = now.Add(s.grace())
	s.armGraceLocked(t.graceDue, now)
}

// armGraceLocked makes sure the grace timer fires by due. A timer armed
// earlier is left alone: it re-arms for due when it fires.
func (s *Scheduler) armGraceLocked(due, now time.Time) {
	if !s.graceAt.IsZero() && !s.graceAt.After(due) {
		return
	}
	s.graceAt = due
	if s.graceTimer == nil {
		s.graceTimer = time.AfterFunc(due.Sub(now), s.graceExpired)
		return
	}
	s.graceTimer.Reset(due.Sub(now))
}

// graceExpired runs when the grace timer fires: it starts a worker for each
// granted op still unclaimed whose grace has run out (its caller is not,
// or no longer, synchronous: the streak ends) and re-arms for the next op
// due.
func (s *Scheduler) graceExpired() {
	now := time.Now()
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
		s.armGraceLocked(next, now)
	}
	s.mu.Unlock()
	for _, t := range late {
		if !t.claimed.Load() {
			s.inlineStreak.Store(0)
		}
		go s.work(t) // claims t, or finds it claimed and returns
	}
}

// graceClaimed stops the grace timer once no granted op waits for it (a
// waiter or worker just claimed one). Left armed, it would fire in the
// middle of the claimed op when that runs longer than the grace: its
// goroutine needs a processor, and with GOMAXPROCS 1 it takes the op's own
// (a thread hand-off and back, each a wake-up on a busy host). Stopping it
// wakes nobody; the next op arms it again.
func (s *Scheduler) graceClaimed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.graceAt.IsZero() {
		return
	}
	for _, st := range s.streams {
		if t := st.running; t != nil && !t.graceDue.IsZero() && !t.claimed.Load() {
			return
		}
	}
	s.graceTimer.Stop()
	s.graceAt = time.Time{}
}
