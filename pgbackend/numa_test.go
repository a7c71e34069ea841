package pgbackend

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/topo"
)

// numaFile writes a topology of ranks on hosts and NUMA nodes for
// HCCL_GO_TOPO_FILE: 100 GB/s between ranks of one node (at least the
// local copy speed init measures, which the model scales by the ratio of
// the links across nodes to within one), crossBW between the nodes of a
// host, netBW across hosts.
func numaFile(t *testing.T, hosts []string, numa []int, crossBW, netBW float64) string {
	t.Helper()
	g := topo.NewGraph(len(hosts))
	for i, h := range hosts {
		g.SetRank(i, topo.RankInfo{Host: h, NUMA: numa[i]})
		for j := range i {
			l := topo.Link{Latency: 20 * time.Microsecond, Bandwidth: netBW}
			switch {
			case hosts[j] == h && numa[j] == numa[i]:
				l = topo.Link{Latency: time.Microsecond, Bandwidth: 100e9}
			case hosts[j] == h:
				l = topo.Link{Latency: 2 * time.Microsecond, Bandwidth: crossBW}
			}
			g.SetLink(j, i, l)
		}
	}
	path := filepath.Join(t.TempDir(), "topo.json")
	require.NoError(t, g.Save(path))
	return path
}

// numaLayout is emulated hosts and NUMA nodes, and the links of a layout
// where the NUMA level pays: on one host, NUMA links at 2.5 GB/s (the
// whole-host arena reads from the other node 40 times slower than within
// one); across hosts, NUMA links ten times slower than a 100 Mbit/s
// network, slow enough that the model's choice does not hang on the local
// copy speeds init measures (slow under the race detector), where only
// the groups' ring, which crosses hosts rather than NUMA nodes, avoids
// them.
type numaLayout struct {
	name         string
	hosts        []string
	numa         []int
	cross, netBW float64
}

func (l numaLayout) file(t *testing.T, crossBW float64) string {
	return numaFile(t, l.hosts, l.numa, crossBW, l.netBW)
}

var numaLayouts = []numaLayout{
	{"1 host 2+2", []string{"a", "a", "a", "a"}, []int{0, 0, 1, 1}, 2.5e9, 5e9},
	{"1 host 3+1", []string{"a", "a", "a", "a"}, []int{0, 1, 0, 0}, 2.5e9, 5e9},
	{"2 hosts x (2+2)", []string{"a", "a", "a", "a", "b", "b", "b", "b"}, []int{0, 0, 1, 1, 0, 0, 1, 1}, 1.25e6, 12.5e6},
}

// The NUMA level is there when links across NUMA nodes are slow, and the
// model takes it for large ops (on one host over the whole-host arena,
// across hosts over the host hierarchy), never for an all_reduce the fast
// lane may take; with equal links it is not there and nothing changes.
func TestNUMALevelChoice(t *testing.T) {
	for _, l := range []numaLayout{numaLayouts[0], numaLayouts[2]} {
		for _, tc := range []struct {
			name  string
			cross float64
			on    bool
		}{{"slow", l.cross, true}, {"equal", 100e9, false}} {
			t.Run(l.name+" "+tc.name, func(t *testing.T) {
				cfg := topoTestConfig()
				cfg.TopoFile = l.file(t, tc.cross)
				cs := connectAll(t, l.hosts, cfg)
				oneHost := len(slices.Compact(slices.Clone(l.hosts))) == 1
				for r, c := range cs {
					m := c.Topology().Model
					require.NotNil(t, m, "rank %d", r)
					assert.Contains(t, m.Summary(), "NUMA level: ", "rank %d", r)
					for i := range c.streams {
						assert.Equal(t, tc.on, c.numa.on(i), "rank %d stream %d", r, i)
					}
					if !tc.on {
						assert.Nil(t, m.NUMA(), "rank %d", r)
						assert.Nil(t, c.Topology().NUMAGroups, "rank %d", r)
						assert.Contains(t, m.NUMALevel(), "off, because", "rank %d", r)
						for _, op := range []string{"allreduce", "allgather", "reducescatter", "broadcast"} {
							algo, err := c.ChooseAlgorithm(op, 64<<20)
							require.NoError(t, err)
							assert.NotEqual(t, "numa", algo, "rank %d %s", r, op)
						}
						continue
					}
					require.NotNil(t, m.NUMA(), "rank %d", r)
					assert.Contains(t, m.NUMALevel(), "on, because", "rank %d", r)
					// In the ring's order, which may cross hosts rather
					// than slow NUMA links.
					assert.ElementsMatch(t, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}[:len(l.hosts)/2], c.Topology().NUMAGroups, "rank %d", r)
					assert.Equal(t, cs[0].Topology().NUMAGroups, c.Topology().NUMAGroups, "rank %d agrees with rank 0", r)
					for _, op := range []string{"allreduce", "allgather", "reducescatter"} {
						if oneHost {
							algo, err := c.ChooseAlgorithm(op, 64<<20)
							require.NoError(t, err)
							assert.Equal(t, "numa", algo, "rank %d %s", r, op)
							continue
						}
						algo, _, all, err := m.ChooseFrom(op, 64<<20, []string{topo.AlgoHier, topo.AlgoNUMA})
						require.NoError(t, err)
						assert.Equal(t, topo.AlgoNUMA, algo, "rank %d %s: %v", r, op, all)
					}
					if oneHost {
						limit := c.laneLimit(StreamDefault)
						require.Positive(t, limit)
						algo, err := c.ChooseAlgorithm("allreduce", limit)
						require.NoError(t, err)
						assert.Equal(t, "shm", algo, "rank %d: an all_reduce the fast lane may take stays in the host's arena", r)
					}
				}
				if !tc.on || !oneHost {
					return
				}
				// A large all_reduce takes the level by itself, and is right.
				const elems = 1 << 20
				eachRank(cs, func(c *Communicator) {
					buf := f32s(float32(c.Rank()), elems)
					w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
					wait(t, w, err)
					assert.Equal(t, float32(6), math.Float32frombits(binary.LittleEndian.Uint32(buf)))
					assert.Equal(t, "numa+arena", lastRoute(t, c), "rank %d", c.Rank())
				})
			})
		}
	}
}

// Every collective of the NUMA level gives the reference result, bitwise
// identical on every rank, for random data of several dtypes and ops and
// counts 0, 1 and sizes no group size divides, on two streams.
func TestNUMALevelCollectives(t *testing.T) {
	for _, l := range numaLayouts {
		t.Run(l.name, func(t *testing.T) {
			cfg := topoTestConfig()
			cfg.TopoFile = l.file(t, l.cross)
			cfg.Algo = map[string]collectives.Algorithm{
				"allreduce": algoNUMA, "allgather": algoNUMA, "reducescatter": algoNUMA,
				"broadcast": algoNUMA, "reduce": algoNUMA,
			}
			cs := connectAll(t, l.hosts, cfg)
			p := len(cs)
			for _, c := range cs {
				require.True(t, c.numa.on(StreamDefault), "rank %d", c.Rank())
			}
			checkRootedAndRing(t, cs, []dtOp{{reduce.Float32, reduce.Sum}, {reduce.BFloat16, reduce.Avg}, {reduce.Float64, reduce.PreMulSum}, {reduce.Int32, reduce.Prod}, {reduce.Uint8, reduce.Max}}, []int{0, 1, 7, 1001, 30011}, "numa+arena")

			// Across hosts, where the exchange dominates, large ops run in
			// rounds (collectives/hier/rounds.go) on the NUMA level too.
			if len(slices.Compact(slices.Clone(l.hosts))) > 1 {
				const big = 3<<20 + 5 // float32 elements: 12 MiB and a bit
				for _, c := range cs {
					o := c.pick(StreamDefault, topo.OpAllReduce, 4*big, c.options("allreduce", 0), allReduceAlgos)
					require.Equal(t, algoNUMA, o.Algo)
					require.Positive(t, o.RoundBytes, "rank %d: a 12 MiB all_reduce in rounds", c.Rank())
				}
				eachRank(cs, func(c *Communicator) {
					buf := f32s(float32(c.Rank()), big)
					w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
					wait(t, w, err)
					for _, i := range []int{0, 1, big / 2, big - 1} {
						want := float32(p*(p-1)/2 + p*i)
						require.Equal(t, want, math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])), "rank %d element %d", c.Rank(), i)
					}
					// Every rank's block is the same sum: each block of the
					// 12 MiB output is it.
					blk := 4 * (big / p)
					ag := make([]byte, p*blk)
					w, err = c.AllGather(buf[:blk], ag, StreamDefault)
					wait(t, w, err)
					for j := range p {
						assert.True(t, slices.Equal(buf[:blk], ag[j*blk:(j+1)*blk]), "rank %d block %d", c.Rank(), j)
					}
				})
			}

			// Random floats round differently in different orders: the
			// ranks still agree bit for bit, and the sums are close to a
			// float64 reference.
			const elems = 100003
			outs, rss := make([][]byte, p), make([][]byte, p)
			inputs := make([][]float32, p)
			eachRank(cs, func(c *Communicator) {
				rng := rand.New(rand.NewPCG(uint64(c.Rank()), 11))
				in := make([]float32, elems)
				buf := make([]byte, 4*elems)
				for i := range in {
					in[i] = float32(rng.NormFloat64())
					binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(in[i]))
				}
				inputs[c.Rank()] = in
				rs := make([]byte, 4*(elems/p))
				w, err := c.ReduceScatter(buf[:len(rs)*p], rs, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				w, err = c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				outs[c.Rank()], rss[c.Rank()] = buf, rs
			})
			for r := range p {
				assert.True(t, slices.Equal(outs[0], outs[r]), "rank %d's sum differs from rank 0's", r)
				block := outs[0][r*len(rss[r]) : (r+1)*len(rss[r])]
				for i := 0; i < len(block); i += 4 {
					got := math.Float32frombits(binary.LittleEndian.Uint32(rss[r][i:]))
					assert.InDelta(t, math.Float32frombits(binary.LittleEndian.Uint32(block[i:])), got, 1e-4, "rank %d reduce_scatter element %d", r, i/4)
				}
			}
			for i := 0; i < elems; i += 997 {
				var sum float64
				for r := range p {
					sum += float64(inputs[r][i])
				}
				got := math.Float32frombits(binary.LittleEndian.Uint32(outs[0][4*i:]))
				assert.InDelta(t, sum, float64(got), 1e-4, "element %d", i)
			}
		})
	}
}

// HCCL_GO_NUMA_NODE places ranks on NUMA nodes without a topology file:
// the nominal graph joins the nodes of a host with the nominal cross-NUMA
// link, slow enough for a level, which the model keeps if it predicts it
// faster for some op (that depends on the local copy speed measured at
// init); the same node on every rank of a host makes no level and no
// model, as without NUMA nodes.
func TestNUMANodeVariable(t *testing.T) {
	hosts := []string{"h", "h", "h", "h"}
	for _, tc := range []struct {
		nodes []int
		on    bool
	}{{[]int{0, 0, 1, 1}, true}, {[]int{1, 1, 1, 1}, false}} {
		t.Run(fmt.Sprint(tc.nodes), func(t *testing.T) {
			cfgs := make([]Config, len(hosts))
			for r := range cfgs {
				env := map[string]string{"HCCL_GO_NUMA_NODE": fmt.Sprint(tc.nodes[r]), "HCCL_GO_TOPO_PROBE": "0"}
				cfg, err := ConfigFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
				require.NoError(t, err)
				cfg.Timeout, cfg.ConnectTimeout = 10*time.Second, 20*time.Second
				cfgs[r] = cfg
			}
			cs, errs := topoConnect(t, hosts, cfgs)
			requireConnected(t, cs, errs)
			for r, c := range cs {
				if !tc.on {
					assert.False(t, c.numa.on(StreamDefault), "rank %d", r)
					assert.Nil(t, c.Topology().Model, "rank %d: one host, one node: no model, as without NUMA nodes", r)
					continue
				}
				info := c.Topology()
				require.NotNil(t, info.Model, "rank %d", r)
				for q, node := range tc.nodes {
					assert.Equal(t, node, info.Graph.Rank(q).NUMA, "rank %d's view of rank %d", r, q)
				}
				assert.Contains(t, info.Model.NUMALevel(), "because links across NUMA nodes are 0.5x", "rank %d", r)
				assert.Equal(t, info.Model.NUMA() != nil, c.numa.on(StreamDefault), "rank %d", r)
				assert.Equal(t, cs[0].numa.on(StreamDefault), c.numa.on(StreamDefault), "rank %d agrees with rank 0", r)
			}
			// Whatever the model picks, the ranks agree and the sum is right.
			eachRank(cs, func(c *Communicator) {
				buf := f32s(float32(c.Rank()), 1<<20)
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, float32(6), math.Float32frombits(binary.LittleEndian.Uint32(buf)))
			})
		})
	}
}

func TestNUMANodeSetting(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{{"auto", -1, false}, {"AUTO", -1, false}, {"0", 0, false}, {"3", 3, false}, {"-1", 0, true}, {"x", 0, true}} {
		env := map[string]string{"HCCL_GO_NUMA_NODE": tc.in}
		cfg, err := ConfigFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, cfg.NUMANode, tc.in)
	}
	assert.Equal(t, -1, DefaultConfig().NUMANode)
}

// A rank lost during ops of the NUMA level fails them on every survivor
// at once, whether it waits in its group's arena (a host-mate of the
// lost rank's NUMA node) or for the exchange between groups, naming the
// lost rank; the groups' arenas leave no segment in /dev/shm.
func TestNUMALevelPeerLoss(t *testing.T) {
	l := numaLayouts[0]
	cfg := reliabilityConfig(t, 20*time.Second)
	cfg.TopoFile = l.file(t, l.cross)
	cfg.Algo = map[string]collectives.Algorithm{"allreduce": algoNUMA}
	cs := connectAll(t, l.hosts, cfg)
	require.True(t, cs[0].numa.on(StreamDefault))
	entries, err := os.ReadDir("/dev/shm")
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), cs[0].shmJob+"-numa", "a NUMA group's segment left in /dev/shm")
	}

	abortLastRankMidOp(t, cs, 1000)
}
