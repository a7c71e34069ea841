package topo

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mib = 1 << 20

func newModel(t *testing.T, g *Graph, p Params) *CostModel {
	t.Helper()
	m, err := NewCostModel(g, p)
	require.NoError(t, err)
	return m
}

func predict(t *testing.T, m *CostModel, op, algo string, n int) float64 {
	t.Helper()
	d, err := m.Predict(op, algo, n)
	require.NoError(t, err)
	return d.Seconds()
}

// On one host with equal links, the model reduces to the textbook
// formulas of REFERENCES.md.
func TestCostMatchesTextbookFormulas(t *testing.T) {
	const (
		p     = 8.0
		alpha = 2e-6
		bw    = 10e9
		gamma = 20e9
	)
	c := Cluster{Hosts: 1, RanksPerHost: int(p), Intra: Link{Latency: 2 * time.Microsecond, Bandwidth: bw}}
	m, err := NewClusterModel(c, Params{ReduceBandwidth: gamma})
	require.NoError(t, err)
	lg := math.Log2(p)
	for _, n := range []float64{8, 64 << 10, 16 * mib} {
		for _, tc := range []struct {
			op, algo string
			want     float64
		}{
			{OpAllReduce, AlgoRing, 2*(p-1)*alpha + 2*(p-1)/p*n/bw + (p-1)/p*n/gamma},
			{OpAllReduce, AlgoRD, lg * (alpha + n/bw + n/gamma)},
			{OpAllReduce, AlgoHD, 2*lg*alpha + 2*(p-1)/p*n/bw + (p-1)/p*n/gamma},
			{OpAllGather, AlgoRing, (p-1)*alpha + (p-1)/p*n/bw},
			{OpReduceScatter, AlgoRing, (p-1)*alpha + (p-1)/p*n/bw + (p-1)/p*n/gamma},
			{OpBroadcast, AlgoTree, lg * (alpha + n/bw)},
		} {
			got := predict(t, m, tc.op, tc.algo, int(n))
			assert.InDelta(t, tc.want, got, 1e-9+1e-9*tc.want, "%s %s n=%g", tc.op, tc.algo, n) // ns rounding
		}
	}
}

func TestChainBroadcastPipelines(t *testing.T) {
	const alpha, bw, chunk = 1e-6, 1e9, 1 << 20
	c := Cluster{Hosts: 1, RanksPerHost: 4, Intra: Link{Latency: time.Microsecond, Bandwidth: bw}}
	m, err := NewClusterModel(c, Params{ChunkBytes: chunk})
	require.NoError(t, err)
	hop := alpha + chunk/bw
	// 3 hops for the first chunk, then 7 more chunks at one hop each.
	assert.InEpsilon(t, 3*hop+7*hop, predict(t, m, OpBroadcast, AlgoChain, 8*chunk), 1e-9)
}

// Case A of issue 5: two hosts of two ranks, 1 Gbit/s between them.
func TestCostTwoHostsTwoRanks(t *testing.T) {
	g := twoLevel([]string{"a", "a", "b", "b"}, 5e9, 125e6)
	m := newModel(t, g, Params{})
	assert.Equal(t, [][]int{{0, 1}, {2, 3}}, m.Groups())
	n := 64 * mib
	hier := predict(t, m, OpAllReduce, AlgoHier, n)
	rankOrder, err := m.PredictRing(OpAllReduce, []int{0, 1, 2, 3}, n)
	require.NoError(t, err)
	crossing, err := m.PredictRing(OpAllReduce, []int{0, 2, 1, 3}, n)
	require.NoError(t, err)
	t.Logf("64 MiB: hier %v, ring 0123 %v (x%.2f), ring 0213 %v (x%.2f)",
		seconds(hier), rankOrder, rankOrder.Seconds()/hier, crossing, crossing.Seconds()/hier)
	// The ring sends 1.5x the bytes across hosts; crossing 4 times, it
	// also shares the link between two flows.
	assert.InDelta(t, 1.5, rankOrder.Seconds()/hier, 0.1)
	assert.InDelta(t, 3, crossing.Seconds()/hier, 0.2)
	algo, _, all, err := m.Choose(OpAllReduce, n)
	require.NoError(t, err)
	assert.Equal(t, AlgoHier, algo, "%v", all)
}

// Case B of issue 5: the 8-device layout. Hierarchy over the fast pairs
// wins; so does halving-doubling in rank order, whose first (largest)
// exchange is at distance 4, over the fast pairs, in this numbering.
func TestCostHCCL8PicksHierarchy(t *testing.T) {
	g := hccl8(30e6)
	m := newModel(t, g, Params{})
	assert.Equal(t, [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}, m.Groups())
	n := 64 * mib
	algo, best, all, err := m.Choose(OpAllReduce, n)
	require.NoError(t, err)
	assert.Contains(t, []string{AlgoHier, AlgoHD}, algo, "%v", all)
	assert.InEpsilon(t, all[AlgoHier].Seconds(), best.Seconds(), 0.01)
	flat, err := m.PredictRing(OpAllReduce, []int{0, 1, 2, 3, 4, 5, 6, 7}, n)
	require.NoError(t, err)
	t.Logf("64 MiB: %v (%s) vs flat ring in rank order %v: x%.2f; all %v", best, algo, flat, flat.Seconds()/best.Seconds(), all)
	assert.Greater(t, flat.Seconds()/best.Seconds(), 1.4)
}

// The compact Cluster and the dense Graph of the same cluster agree.
func TestClusterMatchesItsGraph(t *testing.T) {
	c := Cluster{
		Hosts: 3, RanksPerHost: 4,
		Intra: Link{Latency: time.Microsecond, Bandwidth: 50e9},
		Inter: Link{Latency: 5 * time.Microsecond, Bandwidth: 12.5e9},
	}
	p := Params{ReduceBandwidth: 20e9, CopyBandwidth: 30e9}
	cm, err := NewClusterModel(c, p)
	require.NoError(t, err)
	gm := newModel(t, c.Graph(), p)
	assert.Equal(t, cm.Groups(), gm.Groups())
	for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter, OpBroadcast} {
		algos, err := cm.Algorithms(op)
		require.NoError(t, err)
		for _, algo := range algos {
			for _, n := range []int{1024, 64 * mib} {
				want := predict(t, cm, op, algo, n)
				assert.InEpsilon(t, want, predict(t, gm, op, algo, n), 1e-9, "%s %s %d", op, algo, n)
			}
		}
	}
}

func TestChooseBySize(t *testing.T) {
	c := Cluster{
		Hosts: 4, RanksPerHost: 8,
		Intra: Link{Latency: time.Microsecond, Bandwidth: 100e9},
		Inter: Link{Latency: 5 * time.Microsecond, Bandwidth: 25e9},
	}
	m, err := NewClusterModel(c, Params{})
	require.NoError(t, err)
	for _, tc := range []struct {
		op   string
		n    int
		want string
	}{
		{OpAllReduce, 8, AlgoRD},
		{OpAllReduce, 256 * mib, AlgoHier},
		{OpBroadcast, 8, AlgoTree},
		{OpBroadcast, 256 * mib, AlgoChain},
		{"all_gather", 256 * mib, AlgoHier},
	} {
		algo, best, all, err := m.Choose(tc.op, tc.n)
		require.NoError(t, err)
		assert.Equal(t, tc.want, algo, "%s %d: %v", tc.op, tc.n, all)
		assert.Equal(t, all[algo], best)
		for _, d := range all {
			assert.LessOrEqual(t, best, d)
		}
	}
}

func TestCostModelErrors(t *testing.T) {
	m, err := NewClusterModel(Cluster{Hosts: 1, RanksPerHost: 4, Intra: Link{Bandwidth: 1e9}}, Params{})
	require.NoError(t, err)
	_, _, _, err = m.Choose("alltoall", 10)
	assert.ErrorContains(t, err, "unknown op")
	_, err = m.Predict(OpAllReduce, AlgoHier, 10)
	assert.ErrorContains(t, err, "does not apply")
	_, err = m.Predict(OpAllReduce, AlgoRing, -1)
	assert.ErrorContains(t, err, "negative size")
	_, err = m.PredictRing(OpAllReduce, []int{0, 1, 1, 2}, 10)
	assert.ErrorContains(t, err, "permutation")
	_, err = NewClusterModel(Cluster{Hosts: 2, RanksPerHost: 2, Intra: Link{Bandwidth: 1e9}}, Params{})
	assert.ErrorContains(t, err, "inter-host link")
	_, err = NewCostModelWith(Cluster{Hosts: 1, RanksPerHost: 4, Intra: Link{Bandwidth: 1e9}}, []int{0, 1, 2, 3}, [][]int{{0, 1}, {2}}, Params{})
	assert.ErrorContains(t, err, "unequal")
}

func TestSingleRankCostsNothing(t *testing.T) {
	m, err := NewClusterModel(Cluster{Hosts: 1, RanksPerHost: 1}, Params{})
	require.NoError(t, err)
	for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter, OpBroadcast} {
		_, best, _, err := m.Choose(op, mib)
		require.NoError(t, err)
		assert.Zero(t, best, op)
	}
}

func TestHierarchyGroups(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    *Graph
		want [][]int
	}{
		{"hosts", twoLevel([]string{"a", "b", "a", "b"}, 10e9, 1e9), [][]int{{0, 2}, {1, 3}}},
		{"one host", twoLevel([]string{"a", "a", "a"}, 10e9, 1e9), nil},
		{"fast pairs", hccl8(3e9), [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{"uniform", uniformGraph(1, 5), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, HierarchyGroups(tc.g))
		})
	}
}

func TestChooseFromAndSummary(t *testing.T) {
	m := newModel(t, twoLevel([]string{"a", "a", "b", "b"}, 5e9, 125e6), Params{})
	algo, _, all, err := m.ChooseFrom(OpAllReduce, 64*mib, []string{AlgoRing, AlgoRD, "nonsense"})
	require.NoError(t, err)
	assert.Equal(t, AlgoRing, algo)
	assert.Len(t, all, 2)
	_, _, _, err = m.ChooseFrom(OpBroadcast, 64*mib, []string{AlgoHier})
	assert.ErrorContains(t, err, "none of the algorithms")
	s := m.Summary()
	t.Log("\n" + s)
	assert.Contains(t, s, "4 ranks on 2 hosts")
	assert.Contains(t, s, "ring [0 1 2 3]: slowest link 0.125 GB/s")
	assert.Contains(t, s, "hierarchy: 2 groups of 2: [[0 1] [2 3]]")
}
