package streams

import "time"

// Clock reads time for the operations of a scheduler. A small op's life
// needs a few readings (issued, started, ended) that the scheduler and the
// op's own bookkeeping (a flight recorder, a deadline) share, so that each
// is taken once; and each reading is of the monotonic clock alone: one
// vDSO call, where time.Now makes two (wall and monotonic).
type Clock struct {
	epoch time.Time // a time.Now reading, monotonic part included
}

// NewClock returns a clock whose wall readings start from now.
func NewClock() Clock { return Clock{epoch: time.Now()} }

// Now is the current time: its monotonic reading is exact and its wall
// reading is the epoch's plus the monotonic time since (so it does not
// follow steps of the wall clock made after the epoch).
func (c Clock) Now() time.Time { return c.epoch.Add(time.Since(c.epoch)) }

// Offset is how long after the clock's epoch t is: a reading in one word,
// for records that code outside Go writes too (At reads it back).
func (c Clock) Offset(t time.Time) time.Duration { return t.Sub(c.epoch) }

// At is the time d after the clock's epoch.
func (c Clock) At(d time.Duration) time.Time { return c.epoch.Add(d) }

// IsZero reports whether c is the zero Clock (Config's default).
func (c Clock) IsZero() bool { return c.epoch.IsZero() }

// Stamps are an operation's clock readings.
type Stamps struct {
	// Issued is when the operation was submitted.
	Issued time.Time
	// Started is when it started running.
	Started time.Time
	// Ended is when it ended. An Op that reads the clock at its end
	// anyway (to record it before it returns) sets it; when Run leaves it
	// zero, the scheduler reads the clock once Run has returned.
	Ended time.Time
}

// lazyNow is one clock reading, taken when first needed: a dispatch needs
// the time only to arm a timer or start a deferral.
type lazyNow struct {
	clock Clock
	t     time.Time
}

func (l *lazyNow) get() time.Time {
	if l.t.IsZero() {
		l.t = l.clock.Now()
	}
	return l.t
}
