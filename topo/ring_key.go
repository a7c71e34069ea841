package topo

import "math"

// Rings are compared in integer arithmetic: bandwidths and latencies are
// scaled to integers once per graph, so that sums do not depend on the
// order of addition. A ring and its reverse, or two rings with the same
// links, then score exactly alike, ties are real ties, and the
// tie-breaking rule (lexicographically smallest ring) decides.

// scaleQ is the integer scale of the largest bandwidth or latency (2^40:
// sums of 2^20 links still fit in an int64).
const scaleQ = 1 << 40

// qgraph is a graph's links scaled to integers.
type qgraph struct {
	n       int
	bw, lat []int64 // n×n
	maxBW   float64
}

// quantBW scales a bandwidth like the links'.
func (q *qgraph) quantBW(bw float64) int64 { return int64(math.Round(bw / q.maxBW * scaleQ)) }

func newQGraph(g *Graph) *qgraph {
	n := g.Size()
	maxBW, maxLat := 0.0, 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				maxBW = max(maxBW, g.Bandwidth(i, j))
				maxLat = max(maxLat, g.Link(i, j).Latency.Seconds())
			}
		}
	}
	q := &qgraph{n: n, bw: make([]int64, n*n), lat: make([]int64, n*n), maxBW: maxBW}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			q.bw[i*n+j] = q.quantBW(g.Bandwidth(i, j))
			if maxLat > 0 {
				q.lat[i*n+j] = int64(math.Round(g.Link(i, j).Latency.Seconds() / maxLat * scaleQ))
			}
		}
	}
	return q
}

// ringKey is a ring's RingScore in scaled integers.
type ringKey struct{ bottleneck, bw, lat int64 }

func (q *qgraph) key(ring []int) ringKey {
	k := ringKey{bottleneck: math.MaxInt64}
	for i, a := range ring {
		e := a*q.n + ring[(i+1)%len(ring)]
		k.bottleneck = min(k.bottleneck, q.bw[e])
		k.bw += q.bw[e]
		k.lat += q.lat[e]
	}
	return k
}

// better orders ring keys: higher bottleneck, then higher total bandwidth,
// then lower total latency.
func (k ringKey) better(o ringKey) bool {
	if k.bottleneck != o.bottleneck {
		return k.bottleneck > o.bottleneck
	}
	if k.bw != o.bw {
		return k.bw > o.bw
	}
	return k.lat < o.lat
}

// BetterRing reports whether ring a is strictly better than ring b on g
// (the order OrderRing optimises; RingScore.Better is the same order on
// floating-point sums, which may differ in the last bits for equal rings).
func (g *Graph) BetterRing(a, b []int) bool {
	q := newQGraph(g)
	return q.key(a).better(q.key(b))
}
