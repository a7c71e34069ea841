package pgbackend

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// topoConnect connects one communicator per rank over loopback, rank r on
// host hosts[r] with configuration cfgs[r], and returns each rank's
// communicator and error.
func topoConnect(t *testing.T, hosts []string, cfgs []Config) ([]*Communicator, []error) {
	t.Helper()
	cs, errs, _ := topoConnectJob(t, hosts, cfgs)
	return cs, errs
}

// topoConnectJob is topoConnect that also returns the job id that names
// the ranks' shared-memory segments (jobID).
func topoConnectJob(t *testing.T, hosts []string, cfgs []Config) ([]*Communicator, []error, string) {
	t.Helper()
	n := len(hosts)
	ls := make([]*tcp.Listener, n)
	addrs := make([]string, n)
	for i := range ls {
		l, err := tcp.Listen("127.0.0.1:0")
		require.NoError(t, err)
		ls[i], addrs[i] = l, l.Addr()
	}
	cs := make([]*Communicator, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rv := Rendezvous{Rank: r, Addrs: addrs, HostIDs: hosts, Secret: []byte("topo " + t.Name())}
			cs[r], errs[r] = Connect(context.Background(), ls[r], rv, cfgs[r])
		}()
	}
	wg.Wait()
	job := jobID(Rendezvous{Addrs: addrs})
	t.Cleanup(func() {
		for _, c := range cs {
			if c != nil {
				_ = c.Destroy()
			}
		}
	})
	return cs, errs, job
}

func sameConfigs(n int, cfg Config) []Config {
	cfgs := make([]Config, n)
	for i := range cfgs {
		cfgs[i] = cfg
	}
	return cfgs
}

func topoTestConfig() Config {
	cfg := testConfig()
	cfg.ConnectTimeout = 20 * time.Second
	cfg.TopoProbeBudget = 150 * time.Millisecond
	return cfg
}

func requireConnected(t *testing.T, cs []*Communicator, errs []error) {
	t.Helper()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

// f32s is n float32 values v0, v0+1, ...
func f32s(v0 float32, n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v0+float32(i)))
	}
	return b
}

// TestTopologyTwoHosts: 2 hosts x 2 ranks over loopback (shared memory
// inside a host, TCP across): every rank learns the same graph by probing,
// the hosts are the hierarchy, every algorithm gives the right answer, and
// the dumped file reloads to the same ring.
func TestTopologyTwoHosts(t *testing.T) {
	hosts := []string{"a", "a", "b", "b"}
	dump := filepath.Join(t.TempDir(), "topo.json")
	cfg := topoTestConfig()
	cfg.TopoProbe = "1"
	cfg.TopoDumpFile = dump
	cs, errs := topoConnect(t, hosts, sameConfigs(4, cfg))
	requireConnected(t, cs, errs)

	first := cs[0].Topology()
	require.Equal(t, "probe", first.Source)
	require.NotNil(t, first.Model)
	assert.Less(t, first.ProbeTime, 2*time.Second)
	want, err := first.Graph.MarshalJSON()
	require.NoError(t, err)
	for r, c := range cs {
		info := c.Topology()
		got, err := info.Graph.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "rank %d's graph", r)
		assert.Equal(t, first.Ring, info.Ring, "rank %d's ring", r)
		assert.Equal(t, first.Groups, info.Groups, "rank %d's groups", r)
	}
	require.Len(t, first.Groups, 2, "the hosts are the hierarchy")
	assert.ElementsMatch(t, []int{0, 1}, first.Groups[0])
	assert.ElementsMatch(t, []int{2, 3}, first.Groups[1])
	assert.Equal(t, []string{"self", "shm+arena", "tcp", "tcp"}, cs[0].Info().Transports)

	for _, algo := range []string{"", "ring", "hier", "rd", "hd"} {
		t.Run("allreduce "+algo, func(t *testing.T) {
			for _, c := range cs {
				c.cfg.Algo = map[string]collectives.Algorithm{"allreduce": collectives.Algorithm(algo)}
			}
			eachRank(cs, func(c *Communicator) {
				buf := f32s(float32(c.Rank()), 1001)
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, f32s(6, 1001)[:4], buf[:4])
				want := make([]byte, len(buf))
				for i := range 1001 {
					binary.LittleEndian.PutUint32(want[4*i:], math.Float32bits(float32(6+4*i)))
				}
				assert.Equal(t, want, buf, "rank %d", c.Rank())
			})
		})
	}
	for _, algo := range []string{"ring", "hier"} {
		t.Run("movement "+algo, func(t *testing.T) {
			for _, c := range cs {
				c.cfg.Algo = map[string]collectives.Algorithm{"allgather": collectives.Algorithm(algo), "reducescatter": collectives.Algorithm(algo), "broadcast": collectives.Algorithm(algo)}
				if algo == "ring" {
					c.cfg.Algo["broadcast"] = "chain"
				}
			}
			eachRank(cs, func(c *Communicator) {
				r := c.Rank()
				got := make([]byte, 4*3*4)
				w, err := c.AllGather(f32s(float32(10*r), 3), got, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, bytes.Join([][]byte{f32s(0, 3), f32s(10, 3), f32s(20, 3), f32s(30, 3)}, nil), got)

				rs := make([]byte, 4*2)
				w, err = c.ReduceScatter(f32s(float32(r), 8), rs, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, f32s(float32(6+8*r), 1), rs[:4])

				bc := make([]byte, 4*5)
				w, err = c.Broadcast(f32s(7, 5), bc, 3, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, f32s(7, 5), bc)
			})
		})
	}

	reloaded := cfg
	reloaded.TopoDumpFile = ""
	reloaded.TopoFile = dump
	cs2, errs := topoConnect(t, hosts, sameConfigs(4, reloaded))
	requireConnected(t, cs2, errs)
	again := cs2[1].Topology()
	assert.Equal(t, "file", again.Source)
	assert.Equal(t, first.Ring, again.Ring, "the dumped topology reloads to the same ring")
	assert.Equal(t, first.Groups, again.Groups)
}

// TestTopologySources: where the graph comes from, and what is refused.
func TestTopologySources(t *testing.T) {
	dir := t.TempDir()
	fourHosts := topo.NewGraph(4)
	for i := range 4 {
		fourHosts.SetRank(i, topo.RankInfo{Host: fmt.Sprint("h", i), NUMA: -1})
		for j := range i {
			bw := 1e8
			if i-j == 2 {
				bw = 3e8 // fast pairs (0,2) and (1,3)
			}
			fourHosts.SetLink(j, i, topo.Link{Latency: 10 * time.Microsecond, Bandwidth: bw})
		}
	}
	fileA := filepath.Join(dir, "a.json")
	require.NoError(t, fourHosts.Save(fileA))
	fourHosts.SetLink(0, 1, topo.Link{Latency: time.Microsecond, Bandwidth: 2e8})
	fileB := filepath.Join(dir, "b.json")
	require.NoError(t, fourHosts.Save(fileB))

	with := func(f func(c *Config)) Config {
		cfg := topoTestConfig()
		f(&cfg)
		return cfg
	}
	tests := []struct {
		name       string
		hosts      []string
		cfgs       []Config
		wantSource string
		wantModel  bool
		wantRing   []int
		wantGroups [][]int
		wantErr    string
	}{
		{name: "one host", hosts: []string{"h", "h", "h"}, cfgs: sameConfigs(3, topoTestConfig()),
			wantSource: "hosts", wantRing: []int{0, 1, 2}},
		{name: "two hosts, probe off", hosts: []string{"a", "b", "a", "b"}, cfgs: sameConfigs(4, with(func(c *Config) { c.TopoProbe = "0" })),
			wantSource: "hosts", wantModel: true, wantRing: []int{0, 1, 3, 2}, wantGroups: [][]int{{0, 2}, {1, 3}}},
		{name: "probe wanted by some ranks only", hosts: []string{"a", "b"},
			cfgs:       []Config{with(func(c *Config) { c.TopoProbe = "0" }), with(func(c *Config) { c.TopoProbe = "1" })},
			wantSource: "hosts", wantModel: true, wantRing: []int{0, 1}},
		{name: "file", hosts: []string{"a", "b", "c", "d"}, cfgs: sameConfigs(4, with(func(c *Config) { c.TopoFile = fileA })),
			wantSource: "file", wantModel: true, wantRing: []int{0, 1, 3, 2}, wantGroups: [][]int{{0, 2}, {1, 3}}},
		{name: "ring forced", hosts: []string{"a", "b", "c", "d"}, cfgs: sameConfigs(4, with(func(c *Config) { c.TopoFile = fileA; c.TopoRing = "rank" })),
			wantSource: "file", wantModel: true, wantRing: []int{0, 1, 2, 3}, wantGroups: [][]int{{0, 2}, {1, 3}}},
		{name: "different files", hosts: []string{"a", "b", "c", "d"},
			cfgs:    []Config{with(func(c *Config) { c.TopoFile = fileA }), with(func(c *Config) { c.TopoFile = fileB }), with(func(c *Config) { c.TopoFile = fileA }), with(func(c *Config) { c.TopoFile = fileA })},
			wantErr: "disagree on HCCL_GO_TOPO_FILE"},
		{name: "different files, ranks sharing hosts", hosts: []string{"a", "a", "b", "b"},
			cfgs:    []Config{with(func(c *Config) { c.TopoFile = fileA }), with(func(c *Config) { c.TopoFile = fileB }), with(func(c *Config) { c.TopoFile = fileA }), with(func(c *Config) { c.TopoFile = fileA })},
			wantErr: "disagree on HCCL_GO_TOPO_FILE"},
		{name: "missing file", hosts: []string{"a", "b"}, cfgs: sameConfigs(2, with(func(c *Config) { c.TopoFile = filepath.Join(dir, "none.json") })),
			wantErr: "HCCL_GO_TOPO_FILE"},
		{name: "file of another size", hosts: []string{"a", "b"}, cfgs: sameConfigs(2, with(func(c *Config) { c.TopoFile = fileA })),
			wantErr: "describes 4 ranks"},
		{name: "bad ring", hosts: []string{"a", "b", "c"}, cfgs: sameConfigs(3, with(func(c *Config) { c.TopoRing = "0,1,1" })),
			wantErr: "HCCL_GO_TOPO_RING"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			cs, errs, job := topoConnectJob(t, tc.hosts, tc.cfgs)
			if tc.wantErr != "" {
				// Every rank fails, saying why, within seconds (not the
				// connect timeout), and leaves no segment in /dev/shm.
				for r, err := range errs {
					require.Error(t, err, "rank %d", r)
					assert.Contains(t, err.Error(), tc.wantErr, "rank %d", r)
				}
				assert.Less(t, time.Since(start), 5*time.Second, "the ranks failed only after %v", time.Since(start))
				entries, err := os.ReadDir("/dev/shm")
				require.NoError(t, err)
				for _, e := range entries {
					assert.NotContains(t, e.Name(), job, "a segment of the failed job left in /dev/shm")
				}
				return
			}
			requireConnected(t, cs, errs)
			for r, c := range cs {
				info := c.Topology()
				assert.Equal(t, tc.wantSource, info.Source, "rank %d", r)
				assert.Equal(t, tc.wantModel, info.Model != nil, "rank %d has a model", r)
				assert.Equal(t, tc.wantRing, info.Ring, "rank %d", r)
				assert.Equal(t, tc.wantGroups, info.Groups, "rank %d", r)
			}
			// Every route still computes right.
			eachRank(cs, func(c *Communicator) {
				buf := f32s(1, 300)
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, float32(len(cs)), math.Float32frombits(binary.LittleEndian.Uint32(buf)))
			})
		})
	}
}

func TestParseRing(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr string
	}{
		{"rank", []int{0, 1, 2, 3}, ""},
		{"RANK", []int{0, 1, 2, 3}, ""},
		{"0,2,1,3", []int{0, 2, 1, 3}, ""},
		{" 3, 2,1 ,0", []int{3, 2, 1, 0}, ""},
		{"0,1,2", nil, "3 ranks listed"},
		{"0,1,2,2", nil, "listed once"},
		{"0,1,2,4", nil, "listed once"},
		{"0,1,x,3", nil, "listed once"},
	}
	for _, tc := range tests {
		got, err := parseRing(tc.in, 4)
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

// TestChooseLogsOnce: each (op, algorithm) choice is logged once, and an
// override of hier without a hierarchy falls back to the automatic choice.
func TestChooseLogsOnce(t *testing.T) {
	var buf bytes.Buffer
	g := topo.Cluster{Hosts: 2, RanksPerHost: 2,
		Intra: topo.Link{Latency: time.Microsecond, Bandwidth: 5e9},
		Inter: topo.Link{Latency: 20 * time.Microsecond, Bandwidth: 1.25e8}}.Graph()
	m, err := topo.NewCostModel(g, topo.Params{})
	require.NoError(t, err)
	tp := &topology{model: m, ring: m.Ring(), log: &infoLog{l: log.New(&buf, "", 0), seen: map[string]bool{}}}
	tp.groups = m.Groups()
	for range 3 {
		assert.Equal(t, collectives.Algorithm("hier"), tp.choose(topo.OpAllReduce, 64<<20, "", allReduceAlgos))
	}
	assert.Equal(t, collectives.Algorithm("rd"), tp.choose(topo.OpAllReduce, 8, "", allReduceAlgos))
	assert.Equal(t, 2, bytes.Count(buf.Bytes(), []byte("\n")), buf.String())
	assert.Contains(t, buf.String(), "allreduce of 64 MiB: hier, predicted")

	tp.groups = nil
	assert.Equal(t, collectives.Algorithm("rd"), tp.choose(topo.OpAllReduce, 8, "hier", allReduceAlgos))
	assert.Contains(t, buf.String(), "no hierarchy")
	var none *topology
	assert.Equal(t, collectives.Algorithm("ring"), none.choose(topo.OpAllReduce, 8, "ring", allReduceAlgos))
	assert.Equal(t, []int{0, 1, 2}, none.ringOrder(3))
}

// TestHostModel: large communicators get a model without an n×n graph;
// its ring visits host after host and its groups are the hosts.
func TestHostModel(t *testing.T) {
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = fmt.Sprint("host", i%3) // interleaved: rank order crosses hosts at every step
	}
	m, err := hostModel(ids, topo.Params{})
	require.NoError(t, err)
	ring := m.Ring()
	crossings := 0
	for i, r := range ring {
		if ids[r] != ids[ring[(i+1)%len(ring)]] {
			crossings++
		}
	}
	assert.Equal(t, 3, crossings)
	require.Len(t, m.Groups(), 3)
	algo, _, _, err := m.Choose(topo.OpAllReduce, 1<<30)
	require.NoError(t, err)
	assert.Contains(t, []string{"ring", "hier"}, algo)

	uneven, err := hostModel([]string{"a", "a", "b"}, topo.Params{})
	require.NoError(t, err)
	assert.Empty(t, uneven.Groups(), "hosts of unequal sizes are no hierarchy")
}
