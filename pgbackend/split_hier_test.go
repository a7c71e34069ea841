package pgbackend

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// TestSplitHierAcrossHosts: a split whose members span hosts, two or more
// of them on one, runs the arena hierarchy on its default stream as its
// root does: an arena among its members on each host (even, uneven, a
// member alone on its host, and one alone on its root's host, which has
// no root arena), the model choosing the hierarchy for a large all_reduce
// over the root's slow network, every hierarchical collective giving the
// reference result on both streams (the other stream runs the flat
// algorithms). A split with one member per host keeps messages.
func TestSplitHierAcrossHosts(t *testing.T) {
	cases := []struct {
		hosts  []string
		splits [][]int
		apart  []int // one member per host
	}{
		{[]string{"a", "a", "a", "b", "b"}, [][]int{{4, 0, 1, 3}, {0, 1, 2, 3}, {1, 2, 4}}, []int{0, 3}},
		{[]string{"a", "b", "a", "a"}, [][]int{{3, 1, 0}}, []int{1, 2}},
	}
	hierCfg := testConfig()
	hierCfg.Algo = map[string]collectives.Algorithm{
		"allreduce": collectives.Hier, "allgather": collectives.Hier, "reducescatter": collectives.Hier,
		"broadcast": collectives.Hier, "reduce": collectives.Hier,
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.hosts), func(t *testing.T) {
			checkSplitHier(t, tc.hosts, tc.splits, tc.apart, hierCfg)
		})
	}
}

func checkSplitHier(t *testing.T, hosts []string, splits [][]int, apart []int, hierCfg Config) {
	cfg := topoTestConfig()
	cfg.TopoFile = slowNetworkFile(t, hosts)
	parents := connectAll(t, hosts, cfg)
	for _, split := range splits {
		t.Run(fmt.Sprint(split), func(t *testing.T) {
			auto := members(splitAll(t, parents, fmt.Sprint("auto", split), split, testConfig()))
			forced := members(splitAll(t, parents, fmt.Sprint("hier", split), split, hierCfg))
			for _, c := range auto {
				me := split[c.Rank()]
				for r, kind := range c.Info().Transports {
					switch {
					case r == c.Rank():
					case hosts[split[r]] == hosts[me]:
						assert.Equal(t, "shm+arena", kind, "split rank %d to %d", c.Rank(), r)
					default:
						assert.Equal(t, "tcp", kind, "split rank %d to %d", c.Rank(), r)
					}
				}
				require.NotNil(t, c.hiers[StreamDefault], "split rank %d: the arena hierarchy", c.Rank())
				assert.Nil(t, c.hiers[1], "split rank %d: only the default stream has it", c.Rank())
				assert.Nil(t, c.arenaFor(StreamDefault, c.options("allreduce", 1)), "no whole op in an arena across hosts")
				algo, err := c.ChooseAlgorithm("allreduce", 64<<20)
				require.NoError(t, err)
				assert.Equal(t, "hier", algo, "split rank %d", c.Rank())
			}
			allReduceRanks(t, auto)
			checkRootedAndRing(t, forced, []dtOp{{reduce.Float32, reduce.Sum}, {reduce.BFloat16, reduce.Avg}, {reduce.Int32, reduce.Prod}, {reduce.Uint8, reduce.Max}}, []int{0, 1, 7, 300007}, "")
			eachRank(forced, func(c *Communicator) {
				buf := f32s(float32(c.Rank()), 1031)
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, "hier+arena", lastRoute(t, c), "split rank %d", c.Rank())
			})
		})
	}

	g := members(splitAll(t, parents, "apart", apart, testConfig()))
	for _, c := range g {
		assert.Nil(t, c.hiers[StreamDefault], "one member per host: no arena phase to run")
	}
	allReduceRanks(t, g)
}
