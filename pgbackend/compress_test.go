package pgbackend

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
)

func compressedConfig(t *testing.T, c string) Config {
	t.Helper()
	cfg := testConfig()
	require.NoError(t, cfg.ApplyOptions("compression="+c))
	return cfg
}

func randomF32(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64() * 1e-3)
	}
	return xs
}

func f32Slice(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs
}

// TestCompressedAllReduceHalvesWireBytes: with compression the float32
// all_reduce result stays within the bound, ranks agree, and the counters
// show half the bytes of an uncompressed run; an int32 all_reduce on the
// same communicator is not compressed.
func TestCompressedAllReduceHalvesWireBytes(t *testing.T) {
	const n = 100_000
	sent := map[string]int64{}
	for _, comp := range []string{"none", "fp16", "bf16"} {
		t.Run(comp, func(t *testing.T) {
			cs := newComms(t, 2, compressedConfig(t, comp))
			out := make([][]byte, 2)
			eachRank(cs, func(c *Communicator) {
				buf := f32(randomF32(uint64(c.Rank()), n)...)
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				out[c.Rank()] = buf
			})
			require.Equal(t, out[0], out[1], "ranks differ")
			a, b := randomF32(0, n), randomF32(1, n)
			u, _ := collectives.ParseCompression(comp)
			for i, got := range f32Slice(out[0]) {
				bound := (2*u.UnitRoundoff() + 1e-7) * (math.Abs(float64(a[i])) + math.Abs(float64(b[i])))
				require.LessOrEqual(t, math.Abs(float64(got)-float64(a[i])-float64(b[i])), bound, "element %d", i)
			}
			st := cs[0].Stats()
			assert.Equal(t, comp, st.Compression)
			ar := st.Ops["allreduce"]
			assert.EqualValues(t, 1, ar.Calls)
			assert.Equal(t, ar.BytesSent, ar.BytesRecv)
			sent[comp] = ar.BytesSent

			// int32 is never compressed: n*4 bytes for two ranks.
			eachRank(cs, func(c *Communicator) {
				buf := make([]byte, 4*n)
				w, err := c.AllReduce(buf, buf, reduce.Int32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
			})
			assert.Equal(t, ar.BytesSent+4*n, cs[0].Stats().Ops["allreduce"].BytesSent)
		})
	}
	assert.EqualValues(t, 4*n, sent["none"]) // 2(p-1)/p·n·4 for p = 2
	for _, c := range []string{"fp16", "bf16"} {
		ratio := float64(sent["none"]) / float64(sent[c])
		assert.InDelta(t, 2.0, ratio, 0.01, "%s: %d bytes against %d", c, sent[c], sent["none"])
	}
}

// TestCompressionSkipsTheArena: a single-host communicator reduces in
// shared memory, exactly, and sends no messages for it.
func TestCompressionSkipsTheArena(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, compressedConfig(t, "fp16"))
	out := make([][]byte, 2)
	eachRank(cs, func(c *Communicator) {
		buf := f32(0.1, 1e-7, 3)
		w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
		wait(t, w, err)
		out[c.Rank()] = buf
	})
	assert.Equal(t, f32(0.2, 2e-7, 6), out[0])
	assert.Zero(t, cs[0].Stats().Ops["allreduce"].BytesSent)
}

func TestCompressionOption(t *testing.T) {
	cfg := testConfig()
	assert.Equal(t, collectives.NoCompression, cfg.Compression)
	require.NoError(t, cfg.ApplyOptions("compression=BF16"))
	assert.Equal(t, collectives.CompressBFloat16, cfg.Compression)
	require.Error(t, cfg.ApplyOptions("compression=int8"))
}

// TestSparseAllReduceThroughCommunicator over in-process links and over the
// shared-memory arena (whose dense path the fill-in rule takes here).
func TestSparseAllReduceThroughCommunicator(t *testing.T) {
	routes := map[string]func(t *testing.T) []*Communicator{
		"inproc": func(t *testing.T) []*Communicator { return newComms(t, 2, testConfig()) },
		"arena":  func(t *testing.T) []*Communicator { return connectAll(t, []string{"h", "h"}, testConfig()) },
	}
	for name, mk := range routes {
		t.Run(name, func(t *testing.T) {
			cs := mk(t)
			for _, nnz := range []int{1, 3} { // 3 pairs of 8 bytes > 4 elements of 4: dense
				out := make([][]byte, 2)
				eachRank(cs, func(c *Communicator) {
					idx := []int64{0, 3, 3}[:nnz]
					vals := f32(1, 2, 4)[:4*nnz]
					if c.Rank() == 1 {
						idx = []int64{3, 1, 2}[:nnz]
					}
					out[c.Rank()] = make([]byte, 16)
					w, err := c.SparseAllReduce(idx, vals, reduce.Float32, out[c.Rank()], StreamDefault)
					wait(t, w, err)
				})
				want := map[int][]byte{1: f32(1, 0, 0, 1), 3: f32(1, 2, 4, 7)}[nnz]
				assert.Equal(t, want, out[0], "nnz %d", nnz)
				assert.Equal(t, want, out[1], "nnz %d", nnz)
			}
			st := cs[0].Stats()
			assert.EqualValues(t, 2, st.Ops["sparse_allreduce"].Calls)
			assert.Positive(t, st.Ops["sparse_allreduce"].BytesSent) // the count exchange at least
		})
	}
}

func TestSparseAllReduceInvalid(t *testing.T) {
	cs := newComms(t, 1, testConfig())
	_, err := cs[0].SparseAllReduce([]int64{4}, f32(1), reduce.Float32, make([]byte, 16), StreamDefault)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = cs[0].SparseAllReduce([]int64{0}, make([]byte, 2), reduce.Float16, make([]byte, 8), StreamDefault)
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Zero(t, cs[0].SequenceNumber(), "an invalid call is never queued")
}

func TestStatsJSON(t *testing.T) {
	cs := newComms(t, 2, testConfig())
	eachRank(cs, func(c *Communicator) {
		w, err := c.Send(make([]byte, 10), 1-c.Rank(), 5)
		wait(t, w, err)
		buf := make([]byte, 10)
		w, err = c.Recv(buf, 1-c.Rank(), 5)
		wait(t, w, err)
	})
	var st Stats
	require.NoError(t, json.Unmarshal([]byte(cs[0].StatsJSON()), &st))
	assert.EqualValues(t, 10, st.Ops["p2p"].BytesSent)
	assert.EqualValues(t, 10, st.Ops["p2p"].BytesRecv)
	assert.EqualValues(t, 10, st.BytesSent)
	assert.Equal(t, "none", st.Compression)
}
