package topo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numaGraph is ranks on hosts and NUMA nodes: links within a node are
// same, across nodes of a host cross, across hosts net.
func numaGraph(hosts []string, numa []int, same, cross, net Link) *Graph {
	g := NewGraph(len(hosts))
	for i, h := range hosts {
		g.SetRank(i, RankInfo{Host: h, NUMA: numa[i]})
		for j := range i {
			l := net
			switch {
			case hosts[j] == h && numa[j] == numa[i]:
				l = same
			case hosts[j] == h:
				l = cross
			}
			g.SetLink(j, i, l)
		}
	}
	return g
}

var (
	numaSame = Link{Latency: time.Microsecond, Bandwidth: 8e9}
	numaNet  = Link{Latency: 20 * time.Microsecond, Bandwidth: 2e9}
)

func numaCross(ratio float64) Link {
	return Link{Latency: 2 * time.Microsecond, Bandwidth: ratio * numaSame.Bandwidth}
}

func TestSplitNUMA(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hosts  []string
		numa   []int
		ratio  float64 // of the links across nodes
		groups [][]int
		on     bool
	}{
		{"one node", []string{"a", "a", "a", "a"}, []int{0, 0, 0, 0}, 0.25, nil, false},
		{"unknown nodes", []string{"a", "a", "a", "a"}, []int{-1, -1, -1, -1}, 0.25, nil, false},
		{"2+2 slow", []string{"a", "a", "a", "a"}, []int{0, 0, 1, 1}, 0.25, [][]int{{0, 1}, {2, 3}}, true},
		{"2+2 interleaved ranks", []string{"a", "a", "a", "a"}, []int{1, 0, 1, 0}, 0.5, [][]int{{0, 2}, {1, 3}}, true},
		{"2+2 equal", []string{"a", "a", "a", "a"}, []int{0, 0, 1, 1}, 1, [][]int{{0, 1}, {2, 3}}, false},
		{"2+2 nearly equal", []string{"a", "a", "a", "a"}, []int{0, 0, 1, 1}, 0.9, [][]int{{0, 1}, {2, 3}}, false},
		{"1+1: no arena to gain", []string{"a", "a"}, []int{0, 1}, 0.25, [][]int{{0}, {1}}, false},
		{"3+1", []string{"a", "a", "a", "a"}, []int{0, 0, 0, 1}, 0.5, [][]int{{0, 1, 2}, {3}}, true},
		{"a host with an unknown node stays whole", []string{"a", "a", "b", "b", "b", "b"}, []int{0, -1, 0, 0, 1, 1}, 0.25, [][]int{{0, 1}, {2, 3}, {4, 5}}, true},
		{"2 hosts x (2+2)", []string{"a", "a", "a", "a", "b", "b", "b", "b"}, []int{0, 0, 1, 1, 0, 0, 1, 1}, 0.25, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SplitNUMA(numaGraph(tc.hosts, tc.numa, numaSame, numaCross(tc.ratio), numaNet))
			assert.Equal(t, tc.groups, s.Groups)
			on, why := s.Level()
			assert.Equal(t, tc.on, on, why)
			assert.NotEmpty(t, why)
			if s.Groups != nil && s.Ratio > 0 {
				assert.InDelta(t, tc.ratio, s.Ratio, 1e-9)
			}
		})
	}
}

func TestNUMASlowdown(t *testing.T) {
	numa := []int{0, 0, 1, 1}
	// 2+2 at a quarter of the speed: each rank reads 1/3 locally, 2/3 at
	// a quarter speed: 1/3 + 8/3 = 3.
	assert.InDelta(t, 3.0, numaSlowdown([]int{0, 1, 2, 3}, numa, 0.25), 1e-9)
	assert.Equal(t, 1.0, numaSlowdown([]int{0, 1}, numa, 0.25), "one node")
	assert.Equal(t, 1.0, numaSlowdown([]int{0, 1, 2, 3}, nil, 0.25), "nodes unknown")
	assert.Equal(t, 1.0, numaSlowdown([]int{0, 1, 2, 3}, numa, 1), "equal links")
	// 3+1: the rank alone on its node reads everything across.
	assert.InDelta(t, 2.0, numaSlowdown([]int{0, 1, 2, 3}, []int{0, 0, 0, 1}, 0.5), 1e-9)
}

// numaParams are local costs of a loaded host: copies at 4 GB/s,
// reductions at 2 GB/s.
var numaParams = Params{ReduceBandwidth: 2e9, CopyBandwidth: 4e9, ArenaHier: true, NUMALevel: true}

// The model adds the NUMA level where a host spans NUMA nodes joined by
// slower links, and chooses it for large buffers only; with equal links,
// or without Params.NUMALevel, nothing changes.
func TestCostModelNUMALevel(t *testing.T) {
	oneHost := []string{"a", "a", "a", "a"}
	twoHosts := []string{"a", "a", "a", "a", "b", "b", "b", "b"}
	for _, tc := range []struct {
		name   string
		hosts  []string
		numa   []int
		ratio  float64
		params Params
		level  bool
		large  string // the choice for a 64 MiB op
		small  string // for 4 KiB ("": not checked)
		groups int
		among  []string // the algorithms the choice is made from
	}{
		{"one host 2+2 slow", oneHost, []int{0, 0, 1, 1}, 1.0 / 4, numaParams, true, AlgoNUMA, AlgoShm, 2, []string{AlgoShm, AlgoNUMA}},
		{"one host 2+2 equal", oneHost, []int{0, 0, 1, 1}, 1, numaParams, false, "", "", 0, nil},
		{"one host 2+2, local copies far faster than the links", oneHost, []int{0, 0, 1, 1}, 1.0 / 2, Params{ReduceBandwidth: 50e9, CopyBandwidth: 100e9, NUMALevel: true}, false, "", "", 0, nil},
		{"one host, no arenas", oneHost, []int{0, 0, 1, 1}, 1.0 / 4, Params{ReduceBandwidth: 2e9, CopyBandwidth: 4e9}, false, "", "", 0, nil},
		{"2 hosts x (2+2) slow", twoHosts, []int{0, 0, 1, 1, 0, 0, 1, 1}, 1.0 / 16, numaParams, true, AlgoNUMA, "", 4, []string{AlgoHier, AlgoNUMA}},
		{"2 hosts x (2+2) equal", twoHosts, []int{0, 0, 1, 1, 0, 0, 1, 1}, 1, numaParams, false, "", "", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := numaGraph(tc.hosts, tc.numa, numaSame, numaCross(tc.ratio), numaNet)
			p := tc.params
			if len(tc.hosts) == 4 {
				p.ArenaHier = false // one host: no arena hierarchy across hosts
			}
			m, err := NewCostModel(g, p)
			require.NoError(t, err)
			assert.Contains(t, m.Summary(), "NUMA level: ")
			if !tc.level {
				assert.Nil(t, m.NUMA())
				assert.Contains(t, m.NUMALevel(), "off, because")
				if split := SplitNUMA(g); p.NUMALevel && split.Ratio > 0 && split.Ratio <= NUMASlowRatio {
					assert.Contains(t, m.NUMALevel(), "predicts the level slower")
				}
				for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter, OpBroadcast} {
					algos, err := m.Algorithms(op)
					require.NoError(t, err)
					assert.NotContains(t, algos, AlgoNUMA, op)
					assert.NotContains(t, algos, AlgoShm, op)
				}
				return
			}
			require.NotNil(t, m.NUMA())
			assert.Contains(t, m.NUMALevel(), "on, because")
			assert.Len(t, m.NUMA().Groups(), tc.groups)
			assert.True(t, m.NUMA().ArenaHier())
			for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter} {
				algo, _, all, err := m.ChooseFrom(op, 64<<20, tc.among)
				require.NoError(t, err)
				assert.Equal(t, tc.large, algo, "%s 64 MiB: %v", op, all)
				if tc.small != "" {
					algo, _, all, err = m.ChooseFrom(op, 4<<10, tc.among)
					require.NoError(t, err)
					assert.Equal(t, tc.small, algo, "%s 4 KiB: %v", op, all)
				}
			}
			// Compressed all_reduces keep to the ring and the host hierarchy.
			c, err := m.Compressed(0.5, 0)
			require.NoError(t, err)
			algos, err := c.Algorithms(OpAllReduce)
			require.NoError(t, err)
			assert.NotContains(t, algos, AlgoNUMA)
		})
	}
}

// A model whose graph has no NUMA nodes predicts what it did before the
// NUMA level existed: the arena slowdown is 1 and no algorithm is added.
func TestCostModelWithoutNUMAUnchanged(t *testing.T) {
	hosts := []string{"a", "a", "a", "b"}
	g := numaGraph(hosts, []int{-1, -1, -1, -1}, numaSame, numaSame, numaNet)
	m, err := NewCostModel(g, numaParams)
	require.NoError(t, err)
	plain, err := NewCostModel(g, Params{ReduceBandwidth: 2e9, CopyBandwidth: 4e9, ArenaHier: true})
	require.NoError(t, err)
	for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter, OpBroadcast} {
		a, err := m.Algorithms(op)
		require.NoError(t, err)
		b, err := plain.Algorithms(op)
		require.NoError(t, err)
		assert.Equal(t, b, a, op)
		for _, algo := range a {
			x, err := m.Predict(op, algo, 8<<20)
			require.NoError(t, err)
			y, err := plain.Predict(op, algo, 8<<20)
			require.NoError(t, err)
			assert.Equal(t, y, x, "%s %s", op, algo)
		}
	}
}

// The simulator costs the NUMA level of a topology file whose host spans
// NUMA nodes: numa against the whole-host arena (shm) on one host.
func TestSimulateNUMALevel(t *testing.T) {
	g := numaGraph([]string{"a", "a", "a", "a"}, []int{0, 0, 1, 1}, numaSame, numaCross(1.0/4), numaNet)
	path := t.TempDir() + "/numa.json"
	require.NoError(t, g.Save(path))
	cfg, err := ParseSimArgs([]string{"--topo-file", path, "--size", "64MiB", "--copy-bw", "4GB", "--reduce-bw", "2GB"})
	require.NoError(t, err)
	res, err := Simulate(cfg)
	require.NoError(t, err)
	var algos []string
	for _, a := range res.Algos {
		algos = append(algos, a.Algo)
	}
	assert.Contains(t, algos, AlgoShm)
	assert.Contains(t, algos, AlgoNUMA)
	assert.Contains(t, res.Table(), "numa")
	t.Log(res.Table())
}
