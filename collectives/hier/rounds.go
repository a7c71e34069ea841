package hier

import (
	"context"
	"time"
)

// Rounds of a large all_reduce (Options.RoundBytes). Its three phases run
// one after the other for the whole buffer leave the link idle during the
// arena phases and memory idle during the inter-host one. Cut into
// rounds, round k+1's reduce-scatter in the arena and round k-1's
// all-gather run while round k crosses hosts:
//
//	caller:     RS0  RS1 AG0  RS2 AG1  ...  RS(K-1) AG(K-2)  AG(K-1)
//	goroutine:       X0       X1       ...  X(K-2)   X(K-1)
//
// The caller runs every arena operation, in this order on every local
// rank (the arena's discipline: one operation at a time, the same
// sequence everywhere); a goroutine runs the inter-host phases in round
// order, each a complete all_reduce of the round's segments, so messages
// of consecutive rounds on one link never mix (they travel in order under
// the op's tag). Every rank of a host computes the same rounds from the
// size alone, and hosts need not agree with each other on anything but
// the segments' boundaries, which depend on the round, the same on every
// rank.
//
// Results stay bitwise identical on every rank: each element is still
// reduced inside its host in local rank order and across hosts by one
// all_reduce among the same owners; only the cut of the buffer into
// all_reduces depends on the rounds, and that on the size and RoundBytes,
// which every rank must pass alike.
//
// It pays where the network is the bottleneck: measured on 2 emulated
// hosts of 2 ranks at 1 Gbit/s, a 64 MiB all_reduce took 0.567-0.580 s in
// rounds of 4 or 8 MiB against 0.608-0.662 s in one (the link alone:
// 0.537 s). Where the phases are bound by the CPU (an unshaped link, four
// ranks on two cores) the rounds compete with each other for the cores;
// pgbackend cuts rounds only where its cost model predicts the inter-host
// phase to take at least twice as long as the arena phases.

// round is the elements [lo, hi) of the buffer, as an all_reduce of its
// own: bounds are its pieces on this rank's host (absolute, R_h+1 of them).
type round struct {
	lo, hi int
	bounds []int
}

// rounds cuts n elements of es bytes into rounds of about roundBytes
// (0: one round), whole elements each.
func (c *Comm) rounds(n, es, roundBytes int) []round {
	cuts := roundCuts(n, es, roundBytes)
	out := make([]round, len(cuts)-1)
	for i := range out {
		r := round{lo: cuts[i], hi: cuts[i+1]}
		r.bounds = pieceBounds(r.hi-r.lo, c.localSize())
		for j := range r.bounds {
			r.bounds[j] += r.lo
		}
		out[i] = r
	}
	return out
}

// roundCuts are the bounds of the rounds of n elements of es bytes: at
// least one round (a buffer of fewer than two rounds is one), the first
// n%k of the k rounds one element longer.
func roundCuts(n, es, roundBytes int) []int {
	if roundBytes <= 0 {
		return []int{0, n}
	}
	return pieceBounds(n, max(n/max(roundBytes/es, 1), 1))
}

// of is the round's bytes of buf.
func (r round) of(buf []byte, es int) []byte { return buf[r.lo*es : r.hi*es] }

// piece is local rank i's piece of the round in buf.
func (r round) piece(buf []byte, i, es int) []byte {
	return buf[r.bounds[i]*es : r.bounds[i+1]*es]
}

// counts are the pieces' sizes in units of unit bytes (1: elements).
func (r round) counts(unit int) []int {
	out := make([]int, len(r.bounds)-1)
	for i := range out {
		out[i] = (r.bounds[i+1] - r.bounds[i]) * unit
	}
	return out
}

// pipelined runs the rounds as the schedule above.
func (a *allReduceOp) pipelined(ctx context.Context, rounds []round) error {
	return runRounds(ctx, len(rounds), roundStages{
		before: func(ctx context.Context, k int) error { return a.scatter(ctx, rounds[k]) },
		across: func(ctx context.Context, k int) error { return a.crossHosts(ctx, rounds[k]) },
		after:  func(ctx context.Context, k int) error { return a.gather(ctx, rounds[k]) },
	})
}

// roundStages are the phases of one round of a collective in rounds:
// before and after run on the calling goroutine (arena phases; before may
// be nil), across on a goroutine of its own (the inter-host phase).
type roundStages struct {
	before, across, after func(ctx context.Context, k int) error
}

// runRounds runs k rounds of s on the schedule above: before(k) and
// after(k-2)... on the caller, in a fixed order, while across(k-1) runs;
// round k's after waits for its across. With one round it runs the three
// in turn on the caller. The first failure ends both sides (the context's
// cause names it) before this returns, so no goroutine touches the
// buffers afterwards.
func runRounds(ctx context.Context, k int, s roundStages) error {
	before := s.before
	if before == nil {
		before = func(context.Context, int) error { return nil }
	}
	if k == 1 {
		if err := before(ctx, 0); err != nil {
			return err
		}
		if err := s.across(ctx, 0); err != nil {
			return err
		}
		return s.after(ctx, 0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ready := make(chan int, k)   // rounds whose before has run
	crossed := make(chan int, k) // rounds whose across has run, in order
	acrossDone := make(chan struct{})
	go func() {
		defer close(acrossDone)
		for range k {
			var j int
			select {
			case j = <-ready:
			case <-ctx.Done():
				return
			}
			if err := s.across(ctx, j); err != nil {
				cancel(err)
				return
			}
			crossed <- j
		}
	}()

	afterNext := func() error {
		select {
		case j := <-crossed:
			return s.after(ctx, j)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	err := func() error {
		for j := range k {
			if err := before(ctx, j); err != nil {
				return err
			}
			ready <- j
			if j > 0 {
				if err := afterNext(); err != nil {
					return err
				}
			}
		}
		return afterNext()
	}()
	if err != nil {
		cancel(err)
	}
	<-acrossDone
	if err != nil {
		return context.Cause(ctx) // the first failure, of either side
	}
	return nil
}

// Times is how long a Comm's last collective spent in its arena phases
// (its Host's operations, on the calling goroutine, waits for host-mates
// included; messages among the group for a MessageHost) and in its
// inter-host phase. The rounds of a large all_reduce overlap the two, so
// their sum may exceed the op's time.
type Times struct {
	Arena, Inter time.Duration
	// ArenaWait is the part of Arena spent waiting for the host's other
	// ranks (Host.Waited; 0 for a MessageHost): Arena - ArenaWait is this
	// rank's own work in the arena phases.
	ArenaWait time.Duration
}

// LastTimes is the Times of the last all_reduce, all_gather or
// reduce_scatter that ran on c (zero for other collectives). Read it on
// the goroutine that ran the op, after it returned.
func (c *Comm) LastTimes() Times { return c.last }

// timeArena starts timing an arena phase; calling the result adds its
// duration to c.last.Arena.
func (c *Comm) timeArena() func() {
	start := time.Now()
	var waited time.Duration
	if c.inHost != nil {
		waited = c.inHost.Waited()
	}
	return func() {
		c.last.Arena += time.Since(start)
		if c.inHost != nil {
			c.last.ArenaWait += c.inHost.Waited() - waited
		}
	}
}

// timeInter is timeArena for an inter-host phase (c.last.Inter; in the
// pipelined all_reduce only the inter-host goroutine adds to it).
func (c *Comm) timeInter() func() {
	start := time.Now()
	return func() { c.last.Inter += time.Since(start) }
}
