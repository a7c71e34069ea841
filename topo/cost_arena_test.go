package topo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArenaGroups(t *testing.T) {
	assert.Equal(t, [][]int{{0, 1, 2}, {3}}, ArenaGroups([][]int{{0, 1, 2}, {3}}))
	assert.Nil(t, ArenaGroups([][]int{{0, 1, 2}}), "one host: the arena serves it whole")
	assert.Nil(t, ArenaGroups([][]int{{0}, {1}, {2}}), "no host shared: no arena phase")
}

// With free local work, the arena hierarchy's all_reduce on 2 hosts of 2
// costs its inter-host phase alone: two steps of the two pieces' rings,
// each piece's flows sharing the NIC, n/4 per step: 2α + n/NIC, plus the
// two arena operations. It runs in one round: rounds would hide nothing
// but add latency.
func TestArenaHierAllReduceIsItsInterHostPhase(t *testing.T) {
	const nic = 125e6
	g := twoLevel([]string{"a", "a", "b", "b"}, 1.5e9, nic)
	m := newModel(t, g, Params{ArenaHier: true})
	require.True(t, m.ArenaHier())
	n := 64 * mib
	assert.Zero(t, m.ArenaRounds(OpAllReduce, n))
	want := 2*(10*time.Microsecond).Seconds() + float64(n)/nic + 2*arenaOpSeconds
	assert.InEpsilon(t, want, predict(t, m, OpAllReduce, AlgoHier, n), 1e-9)
}

// Rounds where the network dominates, for all_reduce and all_gather: at
// 1 Gbit/s from two rounds up; not on a network as fast as the arena
// phases, nor without the arena hierarchy, nor for other ops.
func TestArenaRounds(t *testing.T) {
	local := Params{ArenaHier: true, CopyBandwidth: 4e9, ReduceBandwidth: 4e9}
	slow := newModel(t, twoLevel([]string{"a", "a", "b", "b"}, 1.5e9, 125e6), local)
	fast := newModel(t, twoLevel([]string{"a", "a", "b", "b"}, 10e9, 10e9), local)
	messages := newModel(t, twoLevel([]string{"a", "a", "b", "b"}, 1.5e9, 125e6), Params{})
	for _, op := range []string{OpAllReduce, OpAllGather} {
		assert.Zero(t, slow.ArenaRounds(op, 2*HierRoundBytes-4), op)
		assert.Equal(t, HierRoundBytes, slow.ArenaRounds(op, 2*HierRoundBytes), op)
		arena, inter, ok := slow.ArenaPhases(op, 64*mib)
		require.True(t, ok, op)
		assert.Greater(t, inter, 4*arena, op)
		// In rounds the arena phases hide but for a round's worth.
		copyOut := float64(64*mib) / 4e9 // out of place (predict counts it)
		if op == OpAllGather {
			copyOut /= 4
		}
		assert.Less(t, predict(t, slow, op, AlgoHier, 64*mib), (inter+arena/4).Seconds()+copyOut, op)

		arena, inter, _ = fast.ArenaPhases(op, 64*mib)
		assert.Less(t, inter, 2*arena, op)
		assert.Zero(t, fast.ArenaRounds(op, 64*mib), op)

		assert.Zero(t, messages.ArenaRounds(op, 64*mib), op)
		_, _, ok = messages.ArenaPhases(op, 64*mib)
		assert.False(t, ok, op)
	}
	assert.Zero(t, slow.ArenaRounds(OpReduceScatter, 64*mib))

	// Across 256 hosts every round's rings pay 510 latencies (2.6 ms at
	// 5 µs), more than the overlap hides: one round.
	many, err := NewClusterModel(Cluster{Hosts: 256, RanksPerHost: 2,
		Intra: Link{Latency: time.Microsecond, Bandwidth: 1.5e9},
		Inter: Link{Latency: 5 * time.Microsecond, Bandwidth: 125e6}}, local)
	require.NoError(t, err)
	arena, inter, _ := many.ArenaPhases(OpAllReduce, 64*mib)
	require.Greater(t, inter, 2*arena)
	assert.Zero(t, many.ArenaRounds(OpAllReduce, 64*mib))
}

// The intra-host phases at memory speed make the hierarchy cheaper than
// the same algorithm over slow shared-memory links, and the model picks it
// across two hosts of two; on uneven hosts, where the message hierarchy
// does not apply at all, it picks it for all_reduce (whose ring crosses
// between the hosts twice as often as needed).
func TestArenaHierChosenAcrossHosts(t *testing.T) {
	local := Params{ReduceBandwidth: 4e9, CopyBandwidth: 8e9}
	arena := local
	arena.ArenaHier = true
	even := twoLevel([]string{"a", "a", "b", "b"}, 1.5e9, 125e6)
	messages, withArena := newModel(t, even, local), newModel(t, even, arena)
	for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter} {
		assert.Less(t, predict(t, withArena, op, AlgoHier, 64*mib), predict(t, messages, op, AlgoHier, 64*mib), op)
		algo, _, all, err := withArena.Choose(op, 64*mib)
		require.NoError(t, err)
		assert.Equal(t, AlgoHier, algo, "%s: %v", op, all)
	}

	uneven := twoLevel([]string{"a", "a", "a", "b"}, 1.5e9, 125e6)
	assert.Empty(t, newModel(t, uneven, local).Groups(), "message hierarchy needs equal groups")
	m := newModel(t, uneven, arena)
	assert.Equal(t, [][]int{{0, 1, 2}, {3}}, m.Groups())
	for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter, OpBroadcast} {
		algos, err := m.Algorithms(op)
		require.NoError(t, err)
		assert.Contains(t, algos, AlgoHier, op)
	}
	algo, _, all, err := m.Choose(OpAllReduce, 64*mib)
	require.NoError(t, err)
	assert.Equal(t, AlgoHier, algo, "%v", all)
	assert.Contains(t, m.Summary(), "hierarchy: 2 hosts, shared-memory arena inside each: [[0 1 2] [3]]")
}

// Segments of uneven hosts: 3+1 cuts the buffer in thirds, each carried by
// one rank of the big host with the lone rank; 2+3 cuts at 1/3, 1/2, 2/3.
func TestSegmentRings(t *testing.T) {
	m := newModel(t, twoLevel([]string{"a", "a", "a", "b"}, 1e9, 1e8), Params{ArenaHier: true})
	rings, chunks := m.segmentRings(300)
	assert.Equal(t, [][]int{{0, 3}, {1, 3}, {2, 3}}, rings)
	assert.InDeltaSlice(t, []float64{50, 50, 50}, chunks, 1e-9)

	m = newModel(t, twoLevel([]string{"a", "a", "b", "b", "b"}, 1e9, 1e8), Params{ArenaHier: true})
	rings, chunks = m.segmentRings(600)
	assert.Equal(t, [][]int{{0, 2}, {0, 3}, {1, 3}, {1, 4}}, rings)
	assert.InDeltaSlice(t, []float64{100, 50, 50, 100}, chunks, 1e-9)
}

func TestArenaHierGroupsMustBeHosts(t *testing.T) {
	c := Cluster{Hosts: 2, RanksPerHost: 2, Intra: Link{Bandwidth: 1e9}, Inter: Link{Bandwidth: 1e8}}
	_, err := NewCostModelWith(c, []int{0, 1, 2, 3}, [][]int{{0, 2}, {1, 3}}, Params{ArenaHier: true})
	assert.ErrorContains(t, err, "spans hosts")
	_, err = NewCostModelWith(c, []int{0, 1, 2, 3}, [][]int{{0}, {1}, {2, 3}}, Params{ArenaHier: true})
	assert.ErrorContains(t, err, "has 1 of host 0's 2 ranks")
}

// On a uniform cluster, costing a direct exchange per host (as for large
// communicators) gives what costing its flows one by one gives.
func TestDirectExchangePerHostMatchesFlows(t *testing.T) {
	c := Cluster{Hosts: 16, RanksPerHost: 4, Intra: Link{Latency: time.Microsecond, Bandwidth: 1e10}, Inter: Link{Latency: 5 * time.Microsecond, Bandwidth: 1e9}}
	m, err := NewClusterModel(c, Params{ArenaHier: true})
	require.NoError(t, err)
	for _, reverse := range []bool{false, true} {
		exact := m.directExchange(1<<20, reverse)
		saved := maxDirectFlows
		maxDirectFlows = 0
		perHost := m.directExchange(1<<20, reverse)
		maxDirectFlows = saved
		assert.InEpsilon(t, exact, perHost, 1e-9, "reverse=%v", reverse)
	}
}
