package streams

import "time"

// Op is an operation to queue with Reservation.SubmitOp, the alternative
// to Submit's description and closure for a caller that keeps per-op
// state anyway: the op is its own description, built only when one is
// needed (an error), and it shares the scheduler's clock readings.
type Op interface {
	// Run does the operation's work and returns its status (a panic
	// becomes an error, as with Submit). stamps holds when the op was
	// issued and started; Run may set stamps.Ended (see Stamps).
	Run(stamps *Stamps) error
	// Desc describes the operation (Work.Desc), e.g. "allreduce seq 7".
	Desc() string
}

// SubmitOp queues op on the reserved room, like Submit; issued is when the
// caller issued it (a reading of the scheduler's clock, Scheduler.Clock;
// zero: the scheduler reads the clock when it needs the time).
func (r *Reservation) SubmitOp(op Op, issued time.Time, deps ...*Work) *Work {
	if !r.use() {
		return r.reused(op.Desc())
	}
	return r.s.enqueue(r.q, taskSpec{op: op, issued: issued, deps: deps})
}

// SubmitOp is Reservation.SubmitOp on room waited for without a deadline.
func (s *Stream) SubmitOp(op Op, issued time.Time, deps ...*Work) *Work {
	return s.reserve().SubmitOp(op, issued, deps...)
}
