package pgbackend

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
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

// slowNetworkFile writes a topology of hosts (the host of every rank)
// joined by a 100 Mbit/s network, with shared memory inside each host, for
// HCCL_GO_TOPO_FILE. The network is slow enough that the model's choices
// do not hang on the local copy speeds init measures (slow under the race
// detector on a loaded machine).
func slowNetworkFile(t *testing.T, hosts []string) string {
	t.Helper()
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
	path := filepath.Join(t.TempDir(), "topo.json")
	require.NoError(t, g.Save(path))
	return path
}

// hierLayouts are emulated hosts (HCCL_GO_HOST_ID) of the communicator
// tests: even, uneven, and hosts of one rank beside a shared one.
var hierLayouts = [][]string{
	{"a", "a", "b", "b"},
	{"a", "a", "a", "b"},
	{"a", "b", "c", "c"},
}

// Across emulated hosts, every rank sharing a host reaches its host-mates
// through the arena, the model chooses the arena hierarchy for a large
// all_reduce across two hosts, and the hierarchical collectives run with
// their intra-host phases in the arena: the flight recorder says so, and
// the only bytes on the links are the inter-host exchange's.
func TestHierArenaAcrossHosts(t *testing.T) {
	for _, hosts := range hierLayouts {
		t.Run(fmt.Sprint(hosts), func(t *testing.T) {
			cfg := topoTestConfig()
			cfg.TopoFile = slowNetworkFile(t, hosts)
			cs := connectAll(t, hosts, cfg)
			n := len(hosts)
			twoHosts := len(slices.Compact(slices.Clone(hosts))) == 2
			for r, c := range cs {
				for peer, kind := range c.Info().Transports {
					switch {
					case peer == r:
						assert.Equal(t, "self", kind)
					case hosts[peer] == hosts[r]:
						assert.Equal(t, "shm+arena", kind, "rank %d to %d", r, peer)
					default:
						assert.Equal(t, "tcp", kind, "rank %d to %d", r, peer)
					}
				}
				m := c.Topology().Model
				require.NotNil(t, m)
				assert.True(t, m.ArenaHier(), "rank %d", r)
				if twoHosts {
					// A flat ring crosses between the hosts 1.5 times as
					// many bytes; across three hosts (1+1+2) the margin is
					// small enough for the measured local copy speed to
					// decide.
					algo, err := c.ChooseAlgorithm("allreduce", 64<<20)
					require.NoError(t, err)
					assert.Equal(t, "hier", algo, "rank %d", r)
				}
			}

			// A 4 KiB float32 all_reduce, hierarchical by override: rank r
			// carries its share of the pieces across hosts and nothing
			// else, so it sends exactly what its pieces' all_reduces send.
			const elems = 1024
			eachRank(cs, func(c *Communicator) {
				c.cfg.Algo = map[string]collectives.Algorithm{"allreduce": collectives.Hier}
				buf := f32s(float32(c.Rank()), elems)
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, float32(n*(n-1)/2), math.Float32frombits(binary.LittleEndian.Uint32(buf)))
			})
			for r, c := range cs {
				var mates []int
				for q, h := range hosts {
					if h == hosts[r] {
						mates = append(mates, q)
					}
				}
				st := c.Stats().Ops["allreduce"]
				if twoHosts {
					// Rank r's piece of the buffer, split among its host's
					// ranks: across two hosts its segments' all_reduces
					// (two ranks each) send each element once.
					local := slices.Index(mates, r)
					piece := elems / len(mates)
					if local < elems%len(mates) {
						piece++
					}
					assert.Equal(t, int64(4*piece), st.BytesSent, "rank %d sends its piece across hosts and nothing else", r)
				}
				assert.Positive(t, st.BytesSent, "rank %d", r)
				assert.Equal(t, "hier+arena", lastRoute(t, c), "rank %d", r)
			}
		})
	}
}

// lastRoute is the route of the last op in c's flight recorder.
func lastRoute(t *testing.T, c *Communicator) string {
	t.Helper()
	var dump struct {
		Ops []struct {
			Route string `json:"route"`
			Algo  string `json:"algo"`
		} `json:"ops"`
	}
	require.NoError(t, json.Unmarshal(c.TraceJSON("test"), &dump))
	require.NotEmpty(t, dump.Ops)
	return dump.Ops[len(dump.Ops)-1].Route
}

// Every collective with a hierarchical variant gives the reference result
// through Communicator across emulated hosts, bitwise identical on every
// rank, for random data of several dtypes and ops, sizes 0, 1 and counts
// no host size divides, on every stream.
func TestHierArenaCollectives(t *testing.T) {
	for _, hosts := range hierLayouts {
		t.Run(fmt.Sprint(hosts), func(t *testing.T) {
			cfg := topoTestConfig()
			cfg.TopoProbe = "0"
			cfg.Algo = map[string]collectives.Algorithm{
				"allreduce": collectives.Hier, "allgather": collectives.Hier, "reducescatter": collectives.Hier,
				"broadcast": collectives.Hier, "reduce": collectives.Hier,
			}
			cs := connectAll(t, hosts, cfg)
			p := len(cs)
			checkRootedAndRing(t, cs, []dtOp{{reduce.Float32, reduce.Sum}, {reduce.BFloat16, reduce.Avg}, {reduce.Float64, reduce.PreMulSum}, {reduce.Int32, reduce.Prod}, {reduce.Uint8, reduce.Max}, {reduce.Bool, reduce.Bor}}, []int{0, 1, 7, 1001, 300007}, "")

			// Random floats round differently in different orders: the
			// ranks still agree bit for bit.
			outs := make([][]byte, p)
			eachRank(cs, func(c *Communicator) {
				rng := rand.New(rand.NewPCG(uint64(c.Rank()), 9))
				buf := make([]byte, 4*100003)
				for i := 0; i < len(buf); i += 4 {
					binary.LittleEndian.PutUint32(buf[i:], math.Float32bits(float32(rng.NormFloat64())))
				}
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				outs[c.Rank()] = buf
			})
			for r := range p {
				assert.True(t, slices.Equal(outs[0], outs[r]), "rank %d's sum differs from rank 0's", r)
			}
		})
	}
}

type dtOp struct {
	dt reduce.DType
	op reduce.Op
}

// checkRootedAndRing runs all_reduce, reduce_scatter, reduce, all_gather and
// broadcast of n*p small integers (every order of reduction gives the same
// bits) for each case and n on every rank of cs, against referenceReduce.
// route, when set, is the route every all_reduce, reduce and broadcast must
// have taken. Stream and root vary with n.
func checkRootedAndRing(t *testing.T, cs []*Communicator, cases []dtOp, sizes []int, route string) {
	t.Helper()
	p := len(cs)
	for _, tc := range cases {
		for _, n := range sizes {
			stream := n % 2
			inputs := make([][]byte, p)
			for r := range p {
				inputs[r] = smallInts(tc.dt, tc.op, n*p, r)
			}
			want := referenceReduce(tc.dt, tc.op, 0.5, inputs)
			es := tc.dt.Size()
			routed := func(c *Communicator, op, what string) {
				if route != "" {
					assert.Equal(t, route, lastRoute(t, c), "%s %s", op, what)
				}
			}
			eachRank(cs, func(c *Communicator) {
				r := c.Rank()
				what := fmt.Sprintf("%s %s n=%d rank %d", tc.dt, tc.op, n, r)
				ar := slices.Clone(inputs[r])
				w, err := c.AllReduce(ar, ar, tc.dt, tc.op, 0.5, stream)
				wait(t, w, err)
				assert.Equal(t, want, ar, "allreduce %s", what)
				routed(c, "allreduce", what)

				rs := make([]byte, n*es)
				w, err = c.ReduceScatter(inputs[r], rs, tc.dt, tc.op, 0.5, stream)
				wait(t, w, err)
				assert.Equal(t, want[r*n*es:(r+1)*n*es], rs, "reducescatter %s", what)

				root := n % p
				var red []byte
				if r == root {
					red = make([]byte, len(inputs[r]))
				}
				w, err = c.Reduce(inputs[r], red, tc.dt, tc.op, 0.5, root, stream)
				wait(t, w, err)
				if r == root {
					assert.Equal(t, want, red, "reduce %s", what)
				}
				routed(c, "reduce", what)

				ag := make([]byte, p*n*es)
				w, err = c.AllGather(inputs[r][:n*es], ag, stream)
				wait(t, w, err)
				for j := range p {
					assert.Equal(t, inputs[j][:n*es], ag[j*n*es:(j+1)*n*es], "allgather block %d %s", j, what)
				}

				bc := make([]byte, len(inputs[r]))
				w, err = c.Broadcast(inputs[r], bc, p-1-root, stream)
				wait(t, w, err)
				assert.Equal(t, inputs[p-1-root], bc, "broadcast %s", what)
				routed(c, "broadcast", what)
			})
		}
	}
}

// smallInts is rank r's n elements of dt: small integers (powers of two
// for Prod), which every order of reduction sums to the same bits.
func smallInts(dt reduce.DType, op reduce.Op, n, r int) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(r)))
	es := dt.Size()
	out := make([]byte, n*es)
	for i := range n {
		v := rng.IntN(7) - 3
		if op == reduce.Prod {
			v = 1 << rng.IntN(2)
		}
		b := out[i*es:]
		switch dt {
		case reduce.Float32:
			binary.NativeEndian.PutUint32(b, math.Float32bits(float32(v)))
		case reduce.Float64:
			binary.NativeEndian.PutUint64(b, math.Float64bits(float64(v)))
		case reduce.BFloat16:
			bits := math.Float32bits(float32(v))
			binary.NativeEndian.PutUint16(b, uint16(bits>>16))
		case reduce.Int32:
			binary.NativeEndian.PutUint32(b, uint32(int32(v)))
		case reduce.Uint8:
			b[0] = byte(rng.IntN(256))
		case reduce.Bool:
			b[0] = byte(rng.IntN(2))
		}
	}
	return out
}

// referenceReduce folds the inputs in rank order (scaled for PreMulSum),
// then divides for Avg.
func referenceReduce(dt reduce.DType, op reduce.Op, preMul float64, inputs [][]byte) []byte {
	scaled := func(in []byte) []byte {
		out := slices.Clone(in)
		if op == reduce.PreMulSum {
			reduce.Scale(dt, out, in, preMul)
		}
		return out
	}
	acc := scaled(inputs[0])
	for _, in := range inputs[1:] {
		reduce.Reduce(dt, op, acc, scaled(in))
	}
	if op == reduce.Avg {
		reduce.DivideBy(dt, acc, len(inputs))
	}
	return acc
}
