package topo

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bruteForceRing tries every ring starting at 0, in lexicographic order,
// and returns the first best one under tolerance (see ExactRing).
func bruteForceRing(g *Graph, tol float64) []int {
	q := newQGraph(g)
	var rings [][]int
	var permute func(prefix []int, rest []int)
	permute = func(prefix, rest []int) {
		if len(rest) == 0 {
			rings = append(rings, slices.Clone(prefix))
			return
		}
		for i, v := range rest {
			others := append(slices.Clone(rest[:i]), rest[i+1:]...)
			permute(append(prefix, v), others)
		}
	}
	rest := make([]int, g.Size()-1)
	for i := range rest {
		rest[i] = i + 1
	}
	permute([]int{0}, rest)
	var bestBottleneck int64
	for _, r := range rings {
		bestBottleneck = max(bestBottleneck, q.key(r).bottleneck)
	}
	threshold := admissible(bestBottleneck, tol)
	var best []int
	for _, r := range rings {
		k := q.key(r)
		if k.bottleneck < threshold {
			continue
		}
		if best == nil || betterSums(k.bw, k.lat, q.key(best).bw, q.key(best).lat) {
			best = r
		}
	}
	return best
}

func TestExactRingMatchesBruteForce(t *testing.T) {
	for _, tol := range []float64{0, DefaultRingTolerance} {
		for n := 1; n <= 8; n++ {
			for seed := uint64(0); seed < 4; seed++ {
				for name, g := range map[string]*Graph{"uniform": uniformGraph(seed, n), "clustered": clusteredGraph(seed, n), "tiered": tieredGraph(seed, n)} {
					t.Run(fmt.Sprintf("%s/tol=%g/n=%d/seed=%d", name, tol, n, seed), func(t *testing.T) {
						ring, err := ExactRing(g, tol)
						require.NoError(t, err)
						require.NoError(t, checkRing(ring, n))
						if n < 2 {
							return
						}
						assert.Equal(t, canonicalRing(bruteForceRing(g, tol)), ring, "ties go to the lexicographically smallest ring")
					})
				}
			}
		}
	}
}

func TestExactRingRefusesLargeGraphs(t *testing.T) {
	_, err := ExactRing(uniformGraph(0, ExactRingMaxRanks+1), 0)
	require.ErrorContains(t, err, "at most 16")
	_, err = ExactRing(uniformGraph(0, 4), 1)
	require.ErrorContains(t, err, "tolerance")
}

// qualitySeeds is the number of random graphs per size in
// TestHeuristicQuality (fewer under the race detector, which is slow).
var qualitySeeds = uint64(map[bool]int{false: 30, true: 3}[raceEnabled])

// TestHeuristicQuality compares HeuristicRing with ExactRing on seeded
// random graphs of 4..12 ranks, and logs the ratios: without tolerance,
// of the bottlenecks; with DefaultRingTolerance, of the total bandwidths
// (the bottleneck then only has to be admissible).
func TestHeuristicQuality(t *testing.T) {
	for _, kind := range []struct {
		name string
		gen  func(uint64, int) *Graph
	}{{"uniform", uniformGraph}, {"clustered", clusteredGraph}, {"tiered", tieredGraph}} {
		var strict, tolerant ratios
		for n := 4; n <= 12; n++ {
			for seed := uint64(0); seed < qualitySeeds; seed++ {
				g := kind.gen(seed+100, n)
				exact, err := ExactRing(g, 0)
				require.NoError(t, err)
				heur := HeuristicRing(g, 0)
				require.NoError(t, checkRing(heur, n))
				require.False(t, g.BetterRing(heur, exact), "the exact ring is optimal")
				strict.add(g.Score(heur).Bottleneck/g.Score(exact).Bottleneck, !g.BetterRing(exact, heur))

				exact, err = ExactRing(g, DefaultRingTolerance)
				require.NoError(t, err)
				heur = HeuristicRing(g, DefaultRingTolerance)
				require.NoError(t, checkRing(heur, n))
				q := newQGraph(g)
				tolerant.add(g.Score(heur).TotalBandwidth/g.Score(exact).TotalBandwidth, q.key(heur) == q.key(exact))
			}
		}
		t.Logf("%s graphs (%d, n=4..12): tolerance 0: heuristic/exact bottleneck mean %.4f min %.4f, optimal %d; "+
			"tolerance %g: total bandwidth mean %.4f min %.4f, optimal %d",
			kind.name, strict.count, strict.mean(), strict.min, strict.optimal,
			DefaultRingTolerance, tolerant.mean(), tolerant.min, tolerant.optimal)
		assert.GreaterOrEqual(t, strict.mean(), 0.97)
		assert.GreaterOrEqual(t, strict.min, 0.75)
		assert.GreaterOrEqual(t, tolerant.mean(), 0.97)
	}
}

// ratios accumulates quality ratios.
type ratios struct {
	sum, min       float64
	count, optimal int
}

func (r *ratios) add(x float64, optimal bool) {
	if r.count == 0 || x < r.min {
		r.min = x
	}
	r.sum += x
	r.count++
	if optimal {
		r.optimal++
	}
}

func (r *ratios) mean() float64 { return r.sum / float64(r.count) }

func TestRingHCCL8CrossesSlowLinks(t *testing.T) {
	const fast = 30e6
	g := hccl8(fast)
	heuristic := func(g *Graph) []int { return HeuristicRing(g, DefaultRingTolerance) }
	for name, order := range map[string]func(*Graph) []int{"exact": OrderRing, "heuristic": heuristic} {
		t.Run(name, func(t *testing.T) {
			ring := order(g)
			s := g.Score(ring)
			assert.Equal(t, fast/3, s.Bottleneck, "any 8-ring must use slow links")
			assert.Equal(t, 4*fast+4*fast/3, s.TotalBandwidth, "it uses all four fast pairs")
			if name == "exact" {
				assert.Equal(t, []int{0, 1, 5, 2, 6, 3, 7, 4}, ring)
			}
		})
	}
}

func TestRingCrossesHostsTwice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts []string
		want  []int
	}{
		{"contiguous", []string{"a", "a", "b", "b"}, []int{0, 1, 2, 3}},
		{"interleaved", []string{"a", "b", "a", "b"}, []int{0, 1, 3, 2}},
		{"3 hosts x 3", []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := twoLevel(tc.hosts, 100e9, 25e9)
			for k, ring := range [][]int{OrderRing(g), HeuristicRing(g, DefaultRingTolerance)} {
				crossings := 0
				for i, a := range ring {
					if tc.hosts[a] != tc.hosts[ring[(i+1)%len(ring)]] {
						crossings++
					}
				}
				hosts, _ := GroupHosts(tc.hosts)
				assert.Equal(t, len(hosts), crossings, "ring %v", ring)
				if tc.want != nil && k == 0 {
					assert.Equal(t, tc.want, ring)
				}
			}
		})
	}
}

func TestRingIsDeterministicAndCanonical(t *testing.T) {
	for _, n := range []int{5, 12, 16, 24} {
		g := clusteredGraph(7, n)
		first := OrderRing(g)
		require.NoError(t, checkRing(first, n))
		assert.Equal(t, 0, first[0])
		assert.Less(t, first[1], first[n-1])
		assert.Equal(t, first, OrderRing(g))
	}
}

// TestHeuristicRingLargeIsBounded logs the heuristic's time on larger
// graphs (its budget bounds it to a few hundred milliseconds of work).
func TestHeuristicRingLargeIsBounded(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("timing only")
	}
	for _, n := range []int{64, 200} {
		g := clusteredGraph(3, n)
		start := time.Now()
		ring := HeuristicRing(g, DefaultRingTolerance)
		require.NoError(t, checkRing(ring, n))
		t.Logf("%d ranks: %v, bottleneck %.3g (upper bound %.3g)", n, time.Since(start), g.Score(ring).Bottleneck, secondBestBound(g))
	}
}

func TestCanonicalRing(t *testing.T) {
	assert.Equal(t, []int{0, 1, 2, 3}, canonicalRing([]int{2, 3, 0, 1}))
	assert.Equal(t, []int{0, 1, 2, 3}, canonicalRing([]int{3, 2, 1, 0}))
	assert.Equal(t, []int{0, 1}, canonicalRing([]int{1, 0}))
}
