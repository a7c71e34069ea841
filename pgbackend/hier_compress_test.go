package pgbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// compressedHierConfig is a communicator across emulated hosts joined by a
// 100 Mbit/s network (topology file), all_reduce compressed to comp. The
// network is slow enough for the model to choose the hierarchy, and
// rounds, whatever local copy speeds init measures (the race detector and
// a loaded machine slow them down tenfold).
func compressedHierConfig(t *testing.T, hosts []string, comp string) Config {
	t.Helper()
	cfg := topoTestConfig()
	g := topo.NewGraph(len(hosts))
	for i, h := range hosts {
		g.SetRank(i, topo.RankInfo{Host: h, NUMA: -1})
		for j := range i {
			l := topo.Link{Latency: 20 * time.Microsecond, Bandwidth: 12.5e6}
			if hosts[j] == h {
				l = topo.Link{Latency: time.Microsecond, Bandwidth: 1.5e9}
			}
			g.SetLink(j, i, l)
		}
	}
	cfg.TopoFile = filepath.Join(t.TempDir(), "topo.json")
	require.NoError(t, g.Save(cfg.TopoFile))
	require.NoError(t, cfg.ApplyOptions("compression="+comp))
	return cfg
}

// Across emulated hosts with compression, the model chooses the
// hierarchy, whose inter-host phase alone is compressed: every rank ends
// bitwise identical within the error bound, the flight recorder names
// hier+arena and fp16, and each rank sends exactly its segments' 16-bit
// wire chunks (2 bytes per element of its piece and a 4-byte header per
// block), half of what the uncompressed hierarchy sends and nothing for
// the arena phases.
func TestCompressedHierAcrossHosts(t *testing.T) {
	const n = 1024
	for _, tc := range []struct {
		hosts []string
		// sent: bytes each rank sends. 2+2: pieces of 512 elements, each
		// all_reduced between 2 hosts (blocks of 256 each way). 3+1: host
		// a's pieces of 342, 341, 341 elements, all three carried by
		// rank 3.
		sent []int64
	}{
		{[]string{"a", "a", "b", "b"}, []int64{2*512 + 8, 2*512 + 8, 2*512 + 8, 2*512 + 8}},
		{[]string{"a", "a", "a", "b"}, []int64{2*342 + 8, 2*341 + 8, 2*341 + 8, 2*n + 3*8}},
	} {
		t.Run(fmt.Sprint(tc.hosts), func(t *testing.T) {
			cs := connectAll(t, tc.hosts, compressedHierConfig(t, tc.hosts, "fp16"))
			p, nhosts := len(cs), len(slices.Compact(slices.Clone(tc.hosts)))
			for r, c := range cs {
				algo, err := c.ChooseAlgorithm("allreduce", 64<<20)
				require.NoError(t, err)
				assert.Equal(t, "hier", algo, "rank %d", r)
			}
			inputs := make([][]float32, p)
			for r := range p {
				inputs[r] = randomF32(uint64(r), n)
			}
			outs := make([][]byte, p)
			eachRank(cs, func(c *Communicator) {
				buf := f32(inputs[c.Rank()]...)
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				outs[c.Rank()] = buf
			})
			for r := range p {
				require.Equal(t, outs[0], outs[r], "rank %d differs from rank 0", r)
			}
			bound := float64(nhosts)*collectives.CompressFloat16.UnitRoundoff() + float64(p+2)*math.Pow(2, -24)
			for i, got := range f32Slice(outs[0]) {
				exact, mag := 0.0, 0.0
				for r := range p {
					exact += float64(inputs[r][i])
					mag += math.Abs(float64(inputs[r][i]))
				}
				require.LessOrEqual(t, math.Abs(float64(got)-exact), bound*mag, "element %d", i)
			}
			for r, c := range cs {
				op := lastOp(t, c)
				assert.Equal(t, "hier+arena", op.Route, "rank %d", r)
				assert.Equal(t, "hier", op.Algo, "rank %d", r)
				assert.Equal(t, "fp16", op.Compression, "rank %d", r)
				st := c.Stats().Ops["allreduce"]
				assert.Equal(t, tc.sent[r], st.BytesSent, "rank %d sends its pieces' wire chunks across hosts and nothing else", r)
				assert.Equal(t, tc.sent[r], st.BytesRecv, "rank %d", r)
				assert.Positive(t, st.InterNs, "rank %d: time across hosts", r)
				mates := 0
				for _, h := range tc.hosts {
					if h == tc.hosts[r] {
						mates++
					}
				}
				if mates > 1 {
					assert.Positive(t, st.ArenaNs, "rank %d: time in the arena", r)
				} else {
					assert.Zero(t, st.ArenaNs, "rank %d is alone on its host", r)
				}
			}

			// float64 is not compressed: the flight recorder says so.
			eachRank(cs, func(c *Communicator) {
				buf := make([]byte, 8*n)
				w, err := c.AllReduce(buf, buf, reduce.Float64, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
			})
			assert.Empty(t, lastOp(t, cs[0]).Compression)
		})
	}
}

// A compressed ring follows the topology's ring: forced to ring 0,2,1,3,
// every rank ends with the bits of the compressed ring in that order.
func TestCompressedRingFollowsTopology(t *testing.T) {
	hosts := []string{"a", "a", "b", "b"}
	order := []int{0, 2, 1, 3}
	cfg := compressedHierConfig(t, hosts, "bf16")
	cfg.TopoRing = "0,2,1,3"
	cfg.Algo = map[string]collectives.Algorithm{"allreduce": collectives.Ring}
	cs := connectAll(t, hosts, cfg)
	const n = 10_001
	p := len(cs)
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = f32(randomF32(uint64(r)+7, n)...)
	}

	want := make([][]byte, p)
	eps := inproc.NewGroup(p)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, p)
	for r, ep := range eps {
		want[r] = slices.Clone(inputs[r])
		wg.Go(func() {
			errs[r] = collectives.OrderedAllReduceCompressed(ctx, ep, 1, want[r], want[r], reduce.Float32, reduce.Avg, collectives.CompressBFloat16, order, collectives.Options{})
		})
	}
	wg.Wait()
	for r, ep := range eps {
		require.NoError(t, errs[r])
		require.NoError(t, ep.Close())
	}

	outs := make([][]byte, p)
	eachRank(cs, func(c *Communicator) {
		outs[c.Rank()] = slices.Clone(inputs[c.Rank()])
		w, err := c.AllReduce(outs[c.Rank()], outs[c.Rank()], reduce.Float32, reduce.Avg, 0, StreamDefault)
		wait(t, w, err)
	})
	for r := range p {
		require.Equal(t, want[0], outs[r], "rank %d against the compressed ring 0,2,1,3", r)
		op := lastOp(t, cs[r])
		assert.Equal(t, "ring", op.Algo)
		assert.Equal(t, "bf16", op.Compression)
	}
}

// With compression the sparse all_reduce's dense fallback is the
// compressed all_reduce (the hierarchy across hosts), so the fill-in rule
// goes dense at half the lists: 100 pairs a rank (3,200 bytes of lists in
// all, under the 4,096-byte dense buffer) stay sparse uncompressed and go
// dense compressed, where each rank sends its piece's wire chunks.
func TestCompressedSparseDenseFallback(t *testing.T) {
	hosts := []string{"a", "a", "b", "b"}
	const n, nnz = 1024, 100
	for _, comp := range []string{"none", "fp16"} {
		t.Run(comp, func(t *testing.T) {
			cs := connectAll(t, hosts, compressedHierConfig(t, hosts, comp))
			outs := make([][]byte, len(cs))
			eachRank(cs, func(c *Communicator) {
				idx := make([]int64, nnz)
				vals := make([]float32, nnz)
				for j := range idx {
					idx[j] = int64((j*7 + c.Rank()) % n)
					vals[j] = float32(j%5 - 2)
				}
				outs[c.Rank()] = make([]byte, 4*n)
				w, err := c.SparseAllReduce(idx, f32(vals...), reduce.Float32, outs[c.Rank()], StreamDefault)
				wait(t, w, err)
			})
			want := make([]float32, n)
			for r := range cs {
				for j := range nnz {
					want[(j*7+r)%n] += float32(j%5 - 2)
				}
			}
			for r := range cs {
				assert.Equal(t, f32(want...), outs[r], "rank %d", r) // small integers: exact either way
			}
			// Every rank first all-gathers its 16-byte header (count, n)
			// over a ring: 3 x 16 bytes sent.
			const headers = 3 * 16
			for r, c := range cs {
				sent := c.Stats().Ops["sparse_allreduce"].BytesSent
				if comp == "none" {
					assert.EqualValues(t, headers+3*nnz*8, sent, "rank %d: the lists travel (ring all_gather of 3 other ranks' int32 indices and values)", r)
				} else {
					assert.EqualValues(t, headers+2*512+8, sent, "rank %d: its piece's wire chunks", r)
				}
			}
		})
	}
}

type tracedOp struct {
	Route       string `json:"route"`
	Algo        string `json:"algo"`
	Compression string `json:"compression"`
}

// lastOp is the last op in c's flight recorder.
func lastOp(t *testing.T, c *Communicator) tracedOp {
	t.Helper()
	var dump struct {
		Ops []tracedOp `json:"ops"`
	}
	require.NoError(t, json.Unmarshal(c.TraceJSON("test"), &dump))
	require.NotEmpty(t, dump.Ops)
	return dump.Ops[len(dump.Ops)-1]
}

// Across hosts joined by 100 Mbit/s, a large hierarchical all_reduce runs
// in rounds, compressed or not (the network dominates), and so does a
// large all_gather; small ones in one; the results are right either way.
func TestHierRounds(t *testing.T) {
	hosts := []string{"a", "a", "b", "b"}
	for _, comp := range []string{"none", "bf16"} {
		t.Run(comp, func(t *testing.T) {
			cs := connectAll(t, hosts, compressedHierConfig(t, hosts, comp))
			c := cs[0]
			for _, tc := range []struct {
				nbytes int
				rounds int
			}{{64 << 20, topo.HierRoundBytes}, {4 << 20, 0}} {
				o, _ := c.pickAllReduce(StreamDefault, tc.nbytes, reduce.Float32, reduce.Sum, c.options("allreduce", 0))
				assert.Equal(t, collectives.Hier, o.Algo, "%d bytes", tc.nbytes)
				assert.Equal(t, tc.rounds, o.RoundBytes, "%d bytes", tc.nbytes)
				o = c.pick(StreamDefault, topo.OpAllGather, tc.nbytes, c.options("allgather", 0), movementAlgos)
				assert.Equal(t, collectives.Hier, o.Algo, "all_gather of %d bytes", tc.nbytes)
				assert.Equal(t, tc.rounds, o.RoundBytes, "all_gather of %d bytes", tc.nbytes)
			}
			const n = 2*topo.HierRoundBytes/4 + 5 // two rounds
			p := len(cs)
			inputs := make([][]byte, p)
			for r := range p {
				inputs[r] = smallInts(reduce.Float32, reduce.Sum, n, r)
			}
			want := referenceReduce(reduce.Float32, reduce.Sum, 0, inputs)
			eachRank(cs, func(c *Communicator) {
				buf := slices.Clone(inputs[c.Rank()])
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.True(t, slices.Equal(want, buf), "rank %d", c.Rank())

				all := make([]byte, p*len(buf))
				w, err = c.AllGather(inputs[c.Rank()], all, StreamDefault)
				wait(t, w, err)
				assert.True(t, slices.Equal(slices.Concat(inputs...), all), "all_gather on rank %d", c.Rank())
			})
		})
	}
}
