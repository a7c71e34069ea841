package topo

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compressedModel is m compressed to 16-bit floats with the given codec
// speed.
func compressedModel(t *testing.T, m *CostModel, codecBW float64) *CostModel {
	t.Helper()
	c, err := m.Compressed(0.5, codecBW)
	require.NoError(t, err)
	return c
}

// Compressed, all_reduce has the two algorithms that compress, the ring
// and the arena hierarchy; the other ops are unchanged.
func TestCompressedAlgorithms(t *testing.T) {
	g := twoLevel([]string{"a", "a", "b", "b"}, 1.5e9, 125e6)
	for _, tc := range []struct {
		arena bool
		want  []string
	}{{true, []string{AlgoRing, AlgoHier}}, {false, []string{AlgoRing}}} {
		t.Run(fmt.Sprint("arena=", tc.arena), func(t *testing.T) {
			m := compressedModel(t, newModel(t, g, Params{ArenaHier: tc.arena}), 0)
			algos, err := m.Algorithms(OpAllReduce)
			require.NoError(t, err)
			assert.Equal(t, tc.want, algos)
			plain, err := newModel(t, g, Params{ArenaHier: tc.arena}).Algorithms(OpAllGather)
			require.NoError(t, err)
			algos, err = m.Algorithms(OpAllGather)
			require.NoError(t, err)
			assert.Equal(t, plain, algos)
		})
	}
	_, err := newModel(t, g, Params{}).Compressed(0, 0)
	require.Error(t, err)
}

// With free local work, compression halves the bytes of the hierarchy's
// inter-host phase and leaves its latency and arena operations alone:
// 2 hosts of 2, 2α + n/(2·NIC) + 2 arena operations; the ring carries
// half its bytes on every hop.
func TestCompressedHalvesTheWire(t *testing.T) {
	const nic = 125e6
	g := twoLevel([]string{"a", "a", "b", "b"}, 1.5e9, nic)
	plain := newModel(t, g, Params{ArenaHier: true})
	m := compressedModel(t, plain, 0)
	n := 64 * mib
	want := 2*(10*time.Microsecond).Seconds() + float64(n)/nic/2 + 2*arenaOpSeconds
	assert.InEpsilon(t, want, predict(t, m, OpAllReduce, AlgoHier, n), 1e-9)

	flat := newModel(t, g, Params{})
	assert.InEpsilon(t, predict(t, flat, OpAllReduce, AlgoRing, n/2), predict(t, compressedModel(t, flat, 0), OpAllReduce, AlgoRing, n), 1e-9)
	assert.Equal(t, predict(t, plain, OpAllGather, AlgoHier, n), predict(t, m, OpAllGather, AlgoHier, n), "all_gather is not compressed")
}

// The codec costs each rank (3k-1)/k times what it carries in a ring of k:
// the hierarchy its largest piece among H hosts, the ring the whole
// buffer among p ranks.
func TestCompressedCodecCost(t *testing.T) {
	const codec = 2e9
	g := twoLevel([]string{"a", "a", "a", "b", "b", "b"}, 1.5e9, 125e6)
	free := compressedModel(t, newModel(t, g, Params{ArenaHier: true}), 0)
	paid := compressedModel(t, newModel(t, g, Params{ArenaHier: true}), codec)
	n := 60 * mib
	piece := float64(n) / 3
	assert.InEpsilon(t, 5.0/2*piece/codec, predict(t, paid, OpAllReduce, AlgoHier, n)-predict(t, free, OpAllReduce, AlgoHier, n), 1e-6)
	assert.InEpsilon(t, 17.0/6*float64(n)/codec, predict(t, paid, OpAllReduce, AlgoRing, n)-predict(t, free, OpAllReduce, AlgoRing, n), 1e-6)
}

// On a network as fast as memory, with slow arena phases, the ring beats
// the hierarchy uncompressed; compressed, the ring encodes and decodes
// every hop while the hierarchy does so for its inter-host piece only,
// and the hierarchy wins.
func TestCompressedChoiceCountsTheCodec(t *testing.T) {
	g := twoLevel([]string{"a", "a", "b", "b"}, 10e9, 10e9)
	local := Params{ArenaHier: true, CopyBandwidth: 4e9, ReduceBandwidth: 4e9}
	plain := newModel(t, g, local)
	algo, _, all, err := plain.Choose(OpAllReduce, 64*mib)
	require.NoError(t, err)
	assert.Equal(t, AlgoRing, algo, "uncompressed: %v", all)
	algo, _, all, err = compressedModel(t, plain, 2e9).Choose(OpAllReduce, 64*mib)
	require.NoError(t, err)
	assert.Equal(t, AlgoHier, algo, "compressed: %v", all)
}
