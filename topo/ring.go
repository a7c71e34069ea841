package topo

import (
	"fmt"
	"math"
	"slices"
)

// ExactRingMaxRanks is the largest communicator whose ring OrderRing finds
// exactly (dynamic programming over subsets: 2^(n-1)·n² steps, 16 ranks in
// about 70 ms of CPU); beyond it OrderRing uses the heuristic.
const ExactRingMaxRanks = 16

// RingScore measures a ring. Rings compare by Bottleneck (higher is
// better), then TotalBandwidth (higher), then TotalLatency (lower).
type RingScore struct {
	// Bottleneck is the slowest link's bandwidth (bytes/s): it paces a ring
	// collective.
	Bottleneck float64
	// TotalBandwidth sums the links' bandwidths: among rings with the same
	// bottleneck, prefer the one with more fast links (e.g. the ring that
	// crosses between hosts the fewest times).
	TotalBandwidth float64
	// TotalLatency sums the links' latencies, in seconds.
	TotalLatency float64
}

// Better reports whether s is strictly better than t.
func (s RingScore) Better(t RingScore) bool {
	if s.Bottleneck != t.Bottleneck {
		return s.Bottleneck > t.Bottleneck
	}
	if s.TotalBandwidth != t.TotalBandwidth {
		return s.TotalBandwidth > t.TotalBandwidth
	}
	return s.TotalLatency < t.TotalLatency
}

// Score measures ring (a permutation of g's ranks, closed from its last
// rank back to its first).
func (g *Graph) Score(ring []int) RingScore {
	s := RingScore{Bottleneck: math.Inf(1)}
	if len(ring) < 2 {
		return s
	}
	for i, a := range ring {
		l := g.Link(a, ring[(i+1)%len(ring)])
		s.Bottleneck = min(s.Bottleneck, l.Bandwidth)
		s.TotalBandwidth += l.Bandwidth
		s.TotalLatency += l.Latency.Seconds()
	}
	return s
}

// DefaultRingTolerance is OrderRing's tolerance: rings whose slowest link
// is within 10% of the best possible one count as equally fast, and among
// them the one with the most total bandwidth (then the least latency)
// wins. Measured bandwidths carry a few percent of noise; without the
// tolerance, noise on one slow link would decide between rings that
// differ in how often they cross between hosts.
const DefaultRingTolerance = 0.1

// OrderRing returns the best ring over g's ranks (see ExactRing) with
// DefaultRingTolerance: exact up to ExactRingMaxRanks ranks, HeuristicRing
// beyond. The ring starts at rank 0 and its second rank is lower than its
// last, so every rank that runs OrderRing on the same graph gets the same
// slice.
func OrderRing(g *Graph) []int {
	if g.Size() <= ExactRingMaxRanks {
		ring, err := ExactRing(g, DefaultRingTolerance)
		if err == nil {
			return ring
		}
	}
	return HeuristicRing(g, DefaultRingTolerance)
}

// checkTolerance accepts a tolerance in [0, 1).
func checkTolerance(tol float64) error {
	if !(tol >= 0 && tol < 1) {
		return fmt.Errorf("ring tolerance %g outside [0, 1)", tol)
	}
	return nil
}

// admissible is the lowest bottleneck (scaled) a ring may have when the
// best is b and the tolerance tol.
func admissible(b int64, tol float64) int64 {
	return max(1, int64(math.Ceil(float64(b)*(1-tol))))
}

// canonicalRing rotates ring to start at rank 0 and orients it so that its
// second rank is lower than its last: one slice per cycle.
func canonicalRing(ring []int) []int {
	n := len(ring)
	out := make([]int, n)
	start := slices.Index(ring, 0)
	for i := range ring {
		out[i] = ring[(start+i)%n]
	}
	if n > 2 && out[1] > out[n-1] {
		slices.Reverse(out[1:])
	}
	return out
}

// checkRing verifies that ring is a permutation of [0, n).
func checkRing(ring []int, n int) error {
	if len(ring) != n {
		return fmt.Errorf("ring has %d ranks, want %d", len(ring), n)
	}
	seen := make([]bool, n)
	for _, r := range ring {
		if r < 0 || r >= n || seen[r] {
			return fmt.Errorf("ring %v is not a permutation of 0..%d", ring, n-1)
		}
		seen[r] = true
	}
	return nil
}
