package topo

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// heuristicBudget bounds the move evaluations of one HeuristicRing call
// (a few hundred milliseconds), so that a huge topology file cannot
// stall init. The bottleneck search and the final search share it evenly.
const heuristicBudget = 16_000_000

// HeuristicRing returns a good ring by RingScore for any number of ranks,
// deterministically:
//
//  1. Greedy: from each of up to 16 start ranks, repeatedly go to the
//     fastest unvisited rank; keep the best tour.
//  2. Bottleneck search: binary search over the distinct link bandwidths
//     B between the greedy tour's bottleneck and an upper bound (every
//     rank's second-fastest link); for each B, an iterated local search
//     (2-opt and or-opt moves of segments of 1-3 ranks, restarted from
//     "double-bridge" kicks drawn from a fixed seed) minimises the number
//     of links slower than B; B is reached when none remains.
//  3. The same search, links slower than (1-tolerance)·B counted as bad,
//     maximises the total bandwidth, then minimises the total latency.
//
// A tolerance outside [0, 1) counts as 0.
//
// Its quality against ExactRing is measured in TestHeuristicQuality.
func HeuristicRing(g *Graph, tolerance float64) []int {
	if checkTolerance(tolerance) != nil {
		tolerance = 0
	}
	n := g.Size()
	if n <= 3 {
		ring := make([]int, n)
		for i := range ring {
			ring[i] = i
		}
		return ring
	}
	ls := newLocalSearch(g)
	best := ls.greedy()
	vals := distinctBandwidths(g)
	lo := slices.Index(vals, g.Score(best).Bottleneck) // feasible
	hi, _ := slices.BinarySearch(vals, secondBestBound(g))
	searches := bits.Len(uint(hi-lo)) + 2
	ls.share = heuristicBudget / searches
	for lo < hi {
		mid := (lo + hi + 1) / 2
		o := objective{threshold: ls.q.quantBW(vals[mid])}
		if tour := ls.search(best, o); ls.tourCost(tour, o).bad == 0 {
			lo, best = mid, tour
		} else {
			hi = mid - 1
		}
	}
	final := objective{threshold: admissible(ls.q.quantBW(vals[lo]), tolerance), sums: true}
	return canonicalRing(ls.search(best, final))
}

// distinctBandwidths lists the links' bandwidths, sorted, without repeats.
func distinctBandwidths(g *Graph) []float64 {
	n := g.Size()
	vals := make([]float64, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			vals = append(vals, g.Bandwidth(i, j))
		}
	}
	slices.Sort(vals)
	return slices.Compact(vals)
}

// secondBestBound bounds the bottleneck of any ring from above: each rank
// has two ring links, so the slower is at most its second-fastest link.
func secondBestBound(g *Graph) float64 {
	n := g.Size()
	bound := math.Inf(1)
	for i := 0; i < n; i++ {
		first, second := 0.0, 0.0
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			switch w := g.Bandwidth(i, j); {
			case w > first:
				first, second = w, first
			case w > second:
				second = w
			}
		}
		bound = min(bound, second)
	}
	return bound
}

// localSearch improves tours under an additive, lexicographic link cost:
// see objective. Bandwidths and latencies are scaled to integers
// (qgraph) so sums are exact: no move can look like an improvement through
// rounding alone, so the search terminates and every rank takes the same
// moves.
type localSearch struct {
	g     *Graph
	n     int
	q     *qgraph
	evals int // move evaluations spent
	share int // move evaluations one search may spend
	limit int // evals at which the current search stops
}

// cost is a tour's (or a move's change of) cost, compared lexicographically:
// number of bad links, their summed shortfall, -bandwidth, latency.
type cost struct{ bad, short, bw, lat int64 }

func (c cost) add(d cost) cost {
	return cost{c.bad + d.bad, c.short + d.short, c.bw + d.bw, c.lat + d.lat}
}

func (c cost) sub(d cost) cost {
	return cost{c.bad - d.bad, c.short - d.short, c.bw - d.bw, c.lat - d.lat}
}

func (c cost) negative() bool {
	if c.bad != 0 {
		return c.bad < 0
	}
	if c.short != 0 {
		return c.short < 0
	}
	if c.bw != 0 {
		return c.bw < 0
	}
	return c.lat < 0
}

func newLocalSearch(g *Graph) *localSearch {
	return &localSearch{g: g, n: g.Size(), q: newQGraph(g), share: heuristicBudget}
}

// objective selects the link cost: links slower than threshold are bad;
// with sums, bandwidth and latency count too (else only how far each bad
// link falls short, which lets the bottleneck search see past the
// attraction of fast links).
type objective struct {
	threshold int64 // scaled like qgraph.bw
	sums      bool
}

// edge is the cost of the link a-b.
func (ls *localSearch) edge(o objective, a, b int) cost {
	i := a*ls.n + b
	var c cost
	if bw := ls.q.bw[i]; bw < o.threshold {
		c.bad, c.short = 1, o.threshold-bw
	}
	if o.sums {
		c.bw, c.lat = -ls.q.bw[i], ls.q.lat[i]
	}
	return c
}

// greedy is the best nearest-neighbour tour from up to 16 start ranks.
func (ls *localSearch) greedy() []int {
	starts := min(ls.n, 16)
	var best []int
	for k := 0; k < starts; k++ {
		tour := ls.nearestNeighbour(k * ls.n / starts)
		if best == nil || ls.q.key(tour).better(ls.q.key(best)) {
			best = tour
		}
	}
	return best
}

func (ls *localSearch) nearestNeighbour(start int) []int {
	visited := make([]bool, ls.n)
	tour := []int{start}
	visited[start] = true
	for cur := start; len(tour) < ls.n; {
		next := -1
		for j := 0; j < ls.n; j++ {
			if visited[j] {
				continue
			}
			if next < 0 || ls.edge(objective{sums: true}, cur, j).sub(ls.edge(objective{sums: true}, cur, next)).negative() {
				next = j
			}
		}
		tour = append(tour, next)
		visited[next] = true
		cur = next
	}
	return tour
}

// ilsKicks is how many kicks the iterated local search tries per call.
const ilsKicks = 40

// search is an iterated local search from start under threshold: improve,
// then repeatedly kick the current tour (a double bridge: swap two
// adjacent segments) and improve it. The walk moves on whenever the kicked
// tour has no more slow links than the current one, so it can roam over
// plateaus of equal count; the best tour seen is returned. The kicks come
// from a fixed seed, so every rank gets the same tour.
func (ls *localSearch) search(start []int, o objective) []int {
	rng := rand.New(rand.NewPCG(uint64(ls.n), 0x70b0))
	ls.limit = ls.evals + ls.share
	cur := slices.Clone(start)
	ls.improve(cur, o)
	curCost := ls.tourCost(cur, o)
	best, bestCost := cur, curCost
	for k := 0; k < ilsKicks && ls.evals < ls.limit; k++ {
		tour := doubleBridge(cur, rng)
		ls.improve(tour, o)
		c := ls.tourCost(tour, o)
		if c.bad <= curCost.bad {
			cur, curCost = tour, c
		}
		if c.sub(bestCost).negative() {
			best, bestCost = tour, c
		}
	}
	return best
}

// doubleBridge cuts t at 0 < a < b < c < n and swaps the middle segments:
// t[:a] + t[b:c] + t[a:b] + t[c:]. 2-opt alone cannot undo it in one move.
func doubleBridge(t []int, rng *rand.Rand) []int {
	n := len(t)
	cuts := rng.Perm(n - 1)[:3] // distinct, in [0, n-2]
	slices.Sort(cuts)
	a, b, c := cuts[0]+1, cuts[1]+1, cuts[2]+1
	out := make([]int, 0, n)
	out = append(out, t[:a]...)
	out = append(out, t[b:c]...)
	out = append(out, t[a:b]...)
	return append(out, t[c:]...)
}

// tourCost sums the link costs of tour t.
func (ls *localSearch) tourCost(t []int, o objective) cost {
	var c cost
	for i, a := range t {
		c = c.add(ls.edge(o, a, t[(i+1)%ls.n]))
	}
	return c
}

// improve applies improving 2-opt and or-opt moves to tour in place until
// none is left (or the budget is spent), and returns how many of its links
// remain slower than threshold.
func (ls *localSearch) improve(tour []int, o objective) int {
	for ls.evals < ls.limit && (ls.twoOpt(tour, o) || ls.orOpt(tour, o)) {
	}
	return int(ls.tourCost(tour, o).bad)
}

// twoOpt makes one pass of 2-opt moves, applying each improving one: links
// (t[i], t[i+1]) and (t[j], t[j+1]) become (t[i], t[j]) and (t[i+1],
// t[j+1]). It reports whether it changed the tour.
func (ls *localSearch) twoOpt(t []int, o objective) bool {
	n := ls.n
	improved := false
	for i := 0; i < n-1; i++ {
		for j := i + 2; j < n; j++ {
			a, b, c, d := t[i], t[i+1], t[j], t[(j+1)%n]
			if d == a {
				continue
			}
			ls.evals++
			delta := ls.edge(o, a, c).add(ls.edge(o, b, d)).
				sub(ls.edge(o, a, b)).sub(ls.edge(o, c, d))
			if delta.negative() {
				slices.Reverse(t[i+1 : j+1])
				improved = true
			}
		}
	}
	return improved
}

// orOpt makes one pass of or-opt moves, applying each improving one: the
// segment of 1-3 ranks starting at t[i] moves to between two other
// neighbours, in either orientation. It reports whether it changed the tour.
func (ls *localSearch) orOpt(t []int, o objective) bool {
	n := ls.n
	improved := false
	for segLen := 1; segLen <= 3 && segLen <= n-3; segLen++ {
		for i := 0; i < n; i++ {
			if ls.orOptAt(t, o, i, segLen) {
				improved = true
			}
		}
	}
	return improved
}

// orOptAt applies the first improving move of the segment at position i.
func (ls *localSearch) orOptAt(t []int, o objective, i, segLen int) bool {
	n := ls.n
	first, last := t[i], t[(i+segLen-1)%n]
	prev, next := t[(i+n-1)%n], t[(i+segLen)%n]
	removed := ls.edge(o, prev, first).add(ls.edge(o, last, next))
	closed := ls.edge(o, prev, next)
	// Insert between t[k] and t[k+1], both outside the segment.
	for off := segLen; off < n-1; off++ {
		k := (i + off) % n
		p, q := t[k], t[(k+1)%n]
		base := closed.sub(removed).sub(ls.edge(o, p, q))
		ls.evals += 2
		if d := base.add(ls.edge(o, p, first)).add(ls.edge(o, last, q)); d.negative() {
			moveSegment(t, i, segLen, off, false)
			return true
		}
		if d := base.add(ls.edge(o, p, last)).add(ls.edge(o, first, q)); d.negative() {
			moveSegment(t, i, segLen, off, true)
			return true
		}
	}
	return false
}

// moveSegment moves the segLen ranks starting at position i to just after
// the rank at position i+off (mod n), reversed if asked.
func moveSegment(t []int, i, segLen, off int, reversed bool) {
	n := len(t)
	seg := make([]int, segLen)
	for s := range seg {
		seg[s] = t[(i+s)%n]
	}
	if reversed {
		slices.Reverse(seg)
	}
	// The rest of the tour, starting right after the segment.
	rest := make([]int, 0, n)
	for s := segLen; s < n; s++ {
		rest = append(rest, t[(i+s)%n])
	}
	// t[i+off] is rest[off-segLen]; insert the segment after it.
	at := off - segLen + 1
	out := append(append(append(make([]int, 0, n), rest[:at]...), seg...), rest[at:]...)
	copy(t, out)
}
