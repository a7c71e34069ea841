package topo

import (
	"fmt"
	"math"
)

// ExactRing returns the best ring, found by dynamic programming over
// subsets of ranks (a bottleneck travelling-salesman problem), for at most
// ExactRingMaxRanks ranks. The best ring has the most total bandwidth,
// then the least total latency, among the rings whose slowest link is at
// least (1-tolerance)·B, B the best bottleneck of any ring; with tolerance
// 0 it is the best by RingScore.
//
// Rank 0 starts every path; a state is (set of ranks visited, last rank).
//
//  1. Forward, the best bottleneck of a path reaching each state; closing
//     the cycle gives the optimal bottleneck B.
//  2. Backward, over links of bandwidth >= (1-tolerance)·B only, the best
//     (total bandwidth, total latency) of completing the cycle from each
//     state.
//  3. Forward again from rank 0, taking at each step the lowest-numbered
//     rank that keeps the optimum: among equally good rings, the
//     lexicographically smallest, so the answer is unique.
//
// Sums are in scaled integers (ring_key.go), so equal rings tie exactly.
func ExactRing(g *Graph, tolerance float64) ([]int, error) {
	if err := checkTolerance(tolerance); err != nil {
		return nil, fmt.Errorf("exact ring: %w", err)
	}
	n := g.Size()
	if n > ExactRingMaxRanks {
		return nil, fmt.Errorf("exact ring: %d ranks, at most %d", n, ExactRingMaxRanks)
	}
	if n <= 3 {
		ring := make([]int, n) // one cycle only, up to direction
		for i := range ring {
			ring[i] = i
		}
		return ring, nil
	}
	d := newRingDP(newQGraph(g))
	b := admissible(d.bestBottleneck(), tolerance)
	d.completions(b)
	ring, err := d.reconstruct(b)
	if err != nil {
		return nil, fmt.Errorf("exact ring: %w", err)
	}
	return canonicalRing(ring), nil
}

// impossible marks a state from which the cycle cannot be completed.
const impossible = math.MinInt64

// ringDP numbers the ranks other than 0 as bits 0..m-1 (rank = bit+1).
type ringDP struct {
	q    *qgraph
	m    int
	full int
	// completion values per state, index mask*m+last
	sumBW  []int64 // impossible when no completion
	sumLat []int64
}

func newRingDP(q *qgraph) *ringDP {
	m := q.n - 1
	return &ringDP{q: q, m: m, full: 1<<m - 1}
}

func (d *ringDP) bw(a, b int) int64 { return d.q.bw[a*d.q.n+b] }

func (d *ringDP) lat(a, b int) int64 { return d.q.lat[a*d.q.n+b] }

// bestBottleneck is step 1.
func (d *ringDP) bestBottleneck() int64 {
	m := d.m
	bott := make([]int64, (d.full+1)*m) // 0: state unreachable
	for j := 0; j < m; j++ {
		bott[(1<<j)*m+j] = d.bw(0, j+1)
	}
	for mask := 1; mask <= d.full; mask++ {
		for last := 0; last < m; last++ {
			cur := bott[mask*m+last]
			if cur == 0 {
				continue
			}
			for next := 0; next < m; next++ {
				if mask&(1<<next) != 0 {
					continue
				}
				v := min(cur, d.bw(last+1, next+1))
				if i := (mask|1<<next)*m + next; v > bott[i] {
					bott[i] = v
				}
			}
		}
	}
	var best int64
	for last := 0; last < m; last++ {
		best = max(best, min(bott[d.full*m+last], d.bw(last+1, 0)))
	}
	return best
}

// completions is step 2.
func (d *ringDP) completions(b int64) {
	m := d.m
	d.sumBW = make([]int64, (d.full+1)*m)
	d.sumLat = make([]int64, (d.full+1)*m)
	for i := range d.sumBW {
		d.sumBW[i] = impossible
	}
	for last := 0; last < m; last++ {
		if w := d.bw(last+1, 0); w >= b {
			d.sumBW[d.full*m+last] = w
			d.sumLat[d.full*m+last] = d.lat(last+1, 0)
		}
	}
	for mask := d.full - 1; mask > 0; mask-- {
		for last := 0; last < m; last++ {
			if mask&(1<<last) == 0 {
				continue
			}
			i := mask*m + last
			for next := 0; next < m; next++ {
				if bw, lat, ok := d.step(b, mask, last+1, next); ok && betterSums(bw, lat, d.sumBW[i], d.sumLat[i]) {
					d.sumBW[i], d.sumLat[i] = bw, lat
				}
			}
		}
	}
}

// step is the completion value of going from rank `from` (having visited
// mask) to bit next, then on optimally; ok is false when not allowed.
func (d *ringDP) step(b int64, mask, from, next int) (bw, lat int64, ok bool) {
	if mask&(1<<next) != 0 {
		return 0, 0, false
	}
	w := d.bw(from, next+1)
	j := (mask|1<<next)*d.m + next
	if w < b || d.sumBW[j] == impossible {
		return 0, 0, false
	}
	return w + d.sumBW[j], d.lat(from, next+1) + d.sumLat[j], true
}

// reconstruct is step 3.
func (d *ringDP) reconstruct(b int64) ([]int, error) {
	ring := []int{0}
	// Best value from the start: the best first step.
	bestBW, bestLat := int64(impossible), int64(0)
	for next := 0; next < d.m; next++ {
		if bw, lat, ok := d.step(b, 0, 0, next); ok && betterSums(bw, lat, bestBW, bestLat) {
			bestBW, bestLat = bw, lat
		}
	}
	mask, from := 0, 0
	for len(ring) < d.m+1 {
		found := false
		for next := 0; next < d.m && !found; next++ {
			if bw, lat, ok := d.step(b, mask, from, next); ok && bw == bestBW && lat == bestLat {
				ring = append(ring, next+1)
				j := (mask|1<<next)*d.m + next
				bestBW, bestLat = d.sumBW[j], d.sumLat[j]
				mask, from = mask|1<<next, next+1
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no optimal step after %v", ring)
		}
	}
	return ring, nil
}

// betterSums orders completions: more total bandwidth, then less latency.
func betterSums(bw, lat, bw2, lat2 int64) bool {
	if bw != bw2 {
		return bw > bw2
	}
	return lat < lat2
}
