package topo

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bruteForceRing tries every ring starting at 0 in lexicographic order and
// returns the first best one.
func bruteForceRing(g *Graph) []int {
	n := g.Size()
	rest := make([]int, n-1)
	for i := range rest {
		rest[i] = i + 1
	}
	var best []int
	var permute func(k int)
	permute = func(k int) {
		if k == len(rest) {
			ring := append([]int{0}, rest...)
			if best == nil || g.BetterRing(ring, best) {
				best = ring
			}
			return
		}
		for i := k; i < len(rest); i++ {
			// Keep rest[k:] sorted so rings come in lexicographic order.
			seg := slices.Clone(rest[k:])
			v := seg[i-k]
			seg = append(seg[:i-k], seg[i-k+1:]...)
			copy(rest[k:], append([]int{v}, seg...))
			permute(k + 1)
			copy(rest[k:], slices.Sorted(slices.Values(rest[k:])))
		}
	}
	permute(0)
	return best
}

func TestExactRingMatchesBruteForce(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for seed := uint64(0); seed < 4; seed++ {
			for name, g := range map[string]*Graph{"uniform": uniformGraph(seed, n), "clustered": clusteredGraph(seed, n)} {
				t.Run(fmt.Sprintf("%s/n=%d/seed=%d", name, n, seed), func(t *testing.T) {
					ring, err := ExactRing(g)
					require.NoError(t, err)
					require.NoError(t, checkRing(ring, n))
					if n < 2 {
						return
					}
					want := bruteForceRing(g)
					assert.False(t, g.BetterRing(want, ring), "brute force found a better ring")
					assert.Equal(t, canonicalRing(want), ring, "ties go to the lexicographically smallest ring")
				})
			}
		}
	}
}

func TestExactRingRefusesLargeGraphs(t *testing.T) {
	_, err := ExactRing(uniformGraph(0, ExactRingMaxRanks+1))
	require.ErrorContains(t, err, "at most 16")
}

// qualitySeeds is the number of random graphs per size in
// TestHeuristicQuality (fewer under the race detector, which is slow).
var qualitySeeds = uint64(map[bool]int{false: 30, true: 3}[raceEnabled])

// TestHeuristicQuality compares HeuristicRing's bottleneck with the exact
// one on seeded random graphs of 4..12 ranks, and logs the ratio.
func TestHeuristicQuality(t *testing.T) {
	for _, kind := range []struct {
		name string
		gen  func(uint64, int) *Graph
	}{{"uniform", uniformGraph}, {"clustered", clusteredGraph}, {"tiered", tieredGraph}} {
		sum, worst, count, optimal := 0.0, math.Inf(1), 0, 0
		for n := 4; n <= 12; n++ {
			for seed := uint64(0); seed < qualitySeeds; seed++ {
				g := kind.gen(seed+100, n)
				exact, err := ExactRing(g)
				require.NoError(t, err)
				heur := HeuristicRing(g)
				require.NoError(t, checkRing(heur, n))
				ratio := g.Score(heur).Bottleneck / g.Score(exact).Bottleneck
				require.LessOrEqual(t, ratio, 1.0, "the exact ring is optimal")
				sum += ratio
				worst = min(worst, ratio)
				count++
				if !g.BetterRing(exact, heur) {
					optimal++
				}
			}
		}
		mean := sum / float64(count)
		t.Logf("heuristic/exact bottleneck on %d %s graphs (n=4..12): mean %.4f, min %.4f, fully optimal (all criteria) %d/%d",
			count, kind.name, mean, worst, optimal, count)
		assert.GreaterOrEqual(t, mean, 0.97)
		assert.GreaterOrEqual(t, worst, 0.75)
	}
}

func TestRingHCCL8CrossesSlowLinks(t *testing.T) {
	const fast = 30e6
	g := hccl8(fast)
	for name, order := range map[string]func(*Graph) []int{"exact": OrderRing, "heuristic": HeuristicRing} {
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
			for k, ring := range [][]int{OrderRing(g), HeuristicRing(g)} {
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
	for _, n := range []int{5, 12, 16, 24, 40} {
		g := clusteredGraph(7, n)
		first := OrderRing(g)
		require.NoError(t, checkRing(first, n))
		assert.Equal(t, 0, first[0])
		assert.Less(t, first[1], first[n-1])
		for range 3 {
			assert.Equal(t, first, OrderRing(g))
		}
	}
}

func TestHeuristicRingLargeIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	g := clusteredGraph(3, 200)
	start := time.Now()
	ring := HeuristicRing(g)
	require.NoError(t, checkRing(ring, 200))
	t.Logf("200 ranks: %v, bottleneck %.3g", time.Since(start), g.Score(ring).Bottleneck)
}

func TestCanonicalRing(t *testing.T) {
	assert.Equal(t, []int{0, 1, 2, 3}, canonicalRing([]int{2, 3, 0, 1}))
	assert.Equal(t, []int{0, 1, 2, 3}, canonicalRing([]int{3, 2, 1, 0}))
	assert.Equal(t, []int{0, 1}, canonicalRing([]int{1, 0}))
}

func TestHeuristicRingTiming(t *testing.T) {
	for _, n := range []int{32, 64, 200, 500} {
		g := clusteredGraph(3, n)
		start := time.Now()
		ring := HeuristicRing(g)
		require.NoError(t, checkRing(ring, n))
		t.Logf("%d ranks: %v, bottleneck %.3g (bound %.3g)", n, time.Since(start), g.Score(ring).Bottleneck, secondBestBound(g))
	}
}
