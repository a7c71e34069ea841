package topo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/transport/inproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRounds(t *testing.T) {
	for n := 0; n <= 13; n++ {
		rounds := Rounds(n)
		want := n - 1 + n%2
		if n < 2 {
			want = 0
		}
		require.Len(t, rounds, want, "n=%d", n)
		met := map[[2]int]int{}
		for _, partner := range rounds {
			require.Len(t, partner, n)
			for i, p := range partner {
				if p < 0 {
					continue
				}
				require.Equal(t, i, partner[p], "n=%d: partners are mutual", n)
				if i < p {
					met[[2]int{i, p}]++
				}
			}
		}
		assert.Len(t, met, n*(n-1)/2, "n=%d: every pair meets", n)
		for pair, k := range met {
			assert.Equal(t, 1, k, "n=%d: pair %v meets once", n, pair)
		}
	}
}

func TestWavesKeepNICsToOnePair(t *testing.T) {
	// Two hosts of two ranks: a round pairing 0-2 and 1-3 would share the
	// one link between the hosts, so it takes two waves.
	_, hostOf := GroupHosts([]string{"a", "a", "b", "b"})
	assert.Equal(t, [][][2]int{{{0, 2}}, {{1, 3}}}, waves([]int{2, 3, 0, 1}, hostOf))
	assert.Equal(t, [][][2]int{{{0, 1}, {2, 3}}}, waves([]int{1, 0, 3, 2}, hostOf))
	// One rank per host: one wave.
	_, hostOf = GroupHosts([]string{"a", "b", "c", "d"})
	assert.Equal(t, [][][2]int{{{0, 2}, {1, 3}}}, waves([]int{2, 3, 0, 1}, hostOf))
}

// fakeNet is a network with the links of a graph and a virtual clock: a
// Ping takes 2·latency + n/bandwidth (± a deterministic 3%), without
// sleeping, and each barrier advances the clock by the longest time any
// rank spent pinging since the previous one.
type fakeNet struct {
	g *Graph

	mu      sync.Mutex
	spent   []time.Duration
	clock   time.Duration
	arrived int
	release chan struct{}
	failAt  int // rank whose pings fail (-1: none)
}

func newFakeNet(g *Graph) *fakeNet {
	return &fakeNet{g: g, spent: make([]time.Duration, g.Size()), release: make(chan struct{}), failAt: -1}
}

type fakeLinks struct {
	net  *fakeNet
	rank int
}

func (f fakeLinks) Ping(ctx context.Context, peer, nbytes int) (time.Duration, error) {
	if f.rank == f.net.failAt || peer == f.net.failAt {
		return 0, errors.New("link down")
	}
	l := f.net.g.Link(f.rank, peer)
	h := fnv.New32a()
	fmt.Fprint(h, min(f.rank, peer), max(f.rank, peer), nbytes)
	noise := 1 + 0.03*(float64(h.Sum32()%2001)/1000-1)
	d := time.Duration((2*l.Latency.Seconds() + float64(nbytes)/l.Bandwidth) * noise * 1e9)
	f.net.mu.Lock()
	f.net.spent[f.rank] += d
	f.net.mu.Unlock()
	return d, nil
}

func (f fakeLinks) Barrier(ctx context.Context) error {
	n := f.net
	n.mu.Lock()
	ch := n.release
	n.arrived++
	if n.arrived == len(n.spent) {
		longest := time.Duration(0)
		for i, s := range n.spent {
			longest = max(longest, s)
			n.spent[i] = 0
		}
		n.clock += longest
		n.arrived = 0
		close(n.release)
		n.release = make(chan struct{})
		n.mu.Unlock()
		return nil
	}
	n.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// probeAll runs Probe on every rank at once and assembles the graph.
func probeAll(t *testing.T, hosts []string, linksOf func(rank int) ProbeLinks, cfg ProbeConfig) (*Graph, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := len(hosts)
	rows := make([][]Link, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Go(func() {
			rows[r], errs[r] = Probe(ctx, r, hosts, linksOf(r), cfg)
			if errs[r] != nil {
				cancel() // the others would wait at the barrier
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ranks := make([]RankInfo, n)
	for i, h := range hosts {
		ranks[i] = RankInfo{Host: h, NUMA: -1}
	}
	// The exchange of rows, as the lead's all-gather would do it.
	for i, row := range rows {
		decoded, err := DecodeRow(EncodeRow(row), n)
		require.NoError(t, err)
		rows[i] = decoded
	}
	return GraphFromRows(rows, ranks)
}

// Case B of issue 5, on fake links: 300 Mbit/s pairs, 100 Mbit/s
// elsewhere. The probe recovers the fast pairs, the ring and the
// hierarchy within its budget.
func TestProbeRecoversHCCL8(t *testing.T) {
	truth := hccl8(300e6 / 8)
	net := newFakeNet(truth)
	got, err := probeAll(t, truth.HostIDs(), func(r int) ProbeLinks { return fakeLinks{net, r} }, ProbeConfig{})
	require.NoError(t, err)
	t.Logf("8 ranks probed in %v of virtual time", net.clock)
	assert.Less(t, net.clock, time.Second)
	for i := 0; i < 8; i++ {
		for j := i + 1; j < 8; j++ {
			assert.InEpsilon(t, truth.Bandwidth(i, j), got.Bandwidth(i, j), 0.1, "%d-%d", i, j)
		}
	}
	// Noise may pick another ring, but one as good on the true links.
	assert.Equal(t, truth.Score(OrderRing(truth)), truth.Score(OrderRing(got)))
	assert.Equal(t, [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}, HierarchyGroups(got))
}

func TestProbeTwoHostsUsesWaves(t *testing.T) {
	hosts := []string{"a", "a", "b", "b"}
	truth := twoLevel(hosts, 1e9, 125e6)
	net := newFakeNet(truth)
	got, err := probeAll(t, hosts, func(r int) ProbeLinks { return fakeLinks{net, r} }, ProbeConfig{Budget: 500 * time.Millisecond})
	require.NoError(t, err)
	assert.Less(t, net.clock, 500*time.Millisecond)
	assert.InEpsilon(t, 125e6, got.Bandwidth(0, 2), 0.1)
	assert.InEpsilon(t, 1e9, got.Bandwidth(0, 1), 0.1)
	assert.Equal(t, truth.Score(OrderRing(truth)), truth.Score(OrderRing(got)), "crosses hosts twice")
}

func TestProbeReportsFailures(t *testing.T) {
	truth := hccl8(1e9)
	net := newFakeNet(truth)
	net.failAt = 3
	_, err := probeAll(t, truth.HostIDs(), func(r int) ProbeLinks { return fakeLinks{net, r} }, ProbeConfig{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "link down")
	assert.ErrorContains(t, err, "rank 3")

	_, err = Probe(context.Background(), 5, []string{"a"}, nil, ProbeConfig{})
	assert.ErrorContains(t, err, "out of range")
	_, err = Probe(context.Background(), 0, []string{"a", "b"}, nil, ProbeConfig{MinBandwidthBytes: 4})
	assert.ErrorContains(t, err, "bad config")
}

// Over real (in-process) endpoints: both sides agree, every link is
// measured, the graph assembles.
func TestProbeOverEndpoints(t *testing.T) {
	const n = 4
	eps := inproc.NewGroup(n)
	defer func() {
		for _, ep := range eps {
			_ = ep.Close()
		}
	}()
	hosts := []string{"h", "h", "h", "h"}
	start := time.Now()
	g, err := probeAll(t, hosts, func(r int) ProbeLinks { return NewEndpointLinks(eps[r], 1000) },
		ProbeConfig{Budget: 100 * time.Millisecond, MaxBandwidthBytes: 1 << 20})
	require.NoError(t, err)
	t.Logf("4 in-process ranks probed in %v", time.Since(start))
	require.NoError(t, g.Validate())
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			assert.Positive(t, g.Bandwidth(i, j))
		}
	}
}

func TestRowsRoundTripAndErrors(t *testing.T) {
	row := []Link{{}, {Latency: 1500, Bandwidth: 12.5e6}}
	got, err := DecodeRow(EncodeRow(row), 2)
	require.NoError(t, err)
	assert.Equal(t, row, got)
	_, err = DecodeRow(make([]byte, 15), 1)
	assert.ErrorContains(t, err, "want 16")
	_, err = GraphFromRows([][]Link{row}, []RankInfo{{Host: "a"}, {Host: "b"}})
	assert.ErrorContains(t, err, "1 rows for 2 ranks")
	_, err = GraphFromRows([][]Link{row, {{}, {}}}, []RankInfo{{Host: "a"}, {Host: "b"}})
	require.NoError(t, err, "only the lower rank's entry counts")
	_, err = GraphFromRows([][]Link{{{}, {}}, {{}, {}}}, []RankInfo{{Host: "a"}, {Host: "b"}})
	assert.ErrorContains(t, err, "bandwidth")
}
