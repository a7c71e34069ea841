package pgbackend

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/sub"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// Topology discovery at communicator init. Every rank ends with the same
// graph of the communicator's links, the same ring and the same
// hierarchy, so every rank chooses the same algorithm for each op:
//
//  1. Each rank prepares what only it knows: its NUMA node, the topology
//     file if HCCL_GO_TOPO_FILE names one, the speed of its local reduce
//     and copy (the cost model's γ), and whether it wants to probe.
//  2. The ranks all-gather that (topology_exchange.go), and fail together
//     if one failed or if they loaded different files.
//  3. The graph comes from the file, else from probing every link
//     (HCCL_GO_TOPO_PROBE; by default only with several hosts and at most
//     16 ranks; rows all-gathered), else from the host identities with
//     nominal link speeds.
//  4. topo.NewCostModel orders the ring along the fast links and finds the
//     hierarchy groups (hosts, or clusters of fast links).
//
// Without data (one host, no probe, no file) there is no model and the
// collectives keep their own size thresholds.

// topoSpace is the tag space (transport/sub) of discovery's messages.
const topoSpace = 256

// Tags of discovery's messages, inside topoSpace.
const (
	tagTopoInfo transport.Tag = 1
	tagTopoPing transport.Tag = 2 // and 3: the probe's barriers
	tagTopoRows transport.Tag = 4
)

// probeMaxAuto is the most ranks HCCL_GO_TOPO_PROBE=auto probes (the probe
// takes n-1 rounds; beyond this, host identities and nominal links).
const probeMaxAuto = 16

// Nominal links of a graph built from host identities alone: shared memory
// inside a host, a 10 Gbit/s network across. Between NUMA nodes of a host
// (ranks bound to different nodes) shared memory crosses the processors'
// interconnect: half the bandwidth within a node, as two-socket servers
// commonly measure, with a little more latency.
const (
	nominalShmLatency       = time.Microsecond
	nominalShmBW            = 5e9
	nominalCrossNUMALatency = 2 * time.Microsecond
	nominalCrossNUMABW      = nominalShmBW / 2
	nominalNetLatency       = 20 * time.Microsecond
	nominalNetBW            = 1.25e9
)

// numaNodeOf is this rank's NUMA node for discovery: HCCL_GO_NUMA_NODE
// when set, else the node the process is bound to (topo.PinnedNUMANode;
// -1 when unbound, since an unbound process moves between nodes).
func numaNodeOf(cfg Config) int {
	if cfg.NUMANode >= 0 {
		return cfg.NUMANode
	}
	return topo.PinnedNUMANode()
}

// topology is what a communicator learned of its ranks and links at init.
type topology struct {
	source    string // "probe", "file" or "hosts"
	probeTime time.Duration
	graph     *topo.Graph
	model     *topo.CostModel // nil: the collectives choose by size alone
	// compressed is model for compressed all_reduces (HCCL_GO_COMPRESSION):
	// nil without a model or compression.
	compressed *topo.CostModel
	ring       []int // the order ring and chain algorithms follow
	// groups are the model's groups of the hierarchical collectives
	// (collectives/hier; nil: none): hosts, or clusters of fast links.
	groups [][]int
	// hosts is groups as the layout of the arena-based hierarchical
	// collectives when they apply: the groups are the hosts and every
	// shared host has its arenas. Nil otherwise: the groups then run their
	// phases as messages (newHier).
	hosts *hier.Layout
	// numa is the layout of the NUMA level (numa.go): one group per
	// (host, NUMA node), when the model has the level; nil otherwise.
	numa *hier.Layout
	log  *infoLog
}

// TopologyInfo is what a communicator learned of its links at init (zero
// for one built with New, which skips discovery).
type TopologyInfo struct {
	// Source is "probe" (measured at init), "file" (HCCL_GO_TOPO_FILE) or
	// "hosts" (host identities with nominal link speeds).
	Source string
	// ProbeTime is how long probing took (0 without probing).
	ProbeTime time.Duration
	Graph     *topo.Graph
	// Model chooses the algorithms; nil when the collectives choose by
	// size alone (one host and no measured or loaded data).
	Model *topo.CostModel
	// Ring is the order of ring and chain algorithms; Groups the
	// hierarchy of hierarchical ones (nil: none).
	Ring   []int
	Groups [][]int
	// NUMAGroups are the (host, NUMA node) groups of the NUMA level, each
	// in increasing rank order (nil: no level; numa.go).
	NUMAGroups [][]int
}

// Topology describes what the communicator learned of its links at init.
func (c *Communicator) Topology() TopologyInfo {
	t := c.topo
	if t == nil {
		return TopologyInfo{}
	}
	info := TopologyInfo{
		Source: t.source, ProbeTime: t.probeTime, Graph: t.graph, Model: t.model,
		Ring: slices.Clone(t.ring), Groups: slices.Clone(t.groups),
	}
	if t.numa != nil {
		for _, g := range t.numa.Hosts {
			info.NUMAGroups = append(info.NUMAGroups, slices.Clone(g))
		}
	}
	return info
}

// Connect builds this rank's communicator: it links to every other rank
// (consuming the listener), learns the topology (discoverTopology), and
// returns once all of that is done on this rank.
func Connect(ctx context.Context, l *tcp.Listener, rv Rendezvous, cfg Config) (*Communicator, error) {
	c, err := connect(ctx, l, rv, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	t, err := discoverTopology(ctx, c.ep, rv, cfg, c.arenas[0] != nil)
	if err != nil {
		_ = c.Destroy()
		return nil, fmt.Errorf("init rank %d of %d: topology: %w", rv.Rank, len(rv.Addrs), err)
	}
	c.topo = t
	c.addrs = rv.Addrs
	if t.groups != nil {
		for i := range c.streams {
			if c.hiers[i], err = t.newHier(c.ep, c.arenas[i]); err != nil {
				_ = c.Destroy()
				return nil, fmt.Errorf("init rank %d of %d: hierarchical collectives: %w", rv.Rank, len(rv.Addrs), err)
			}
		}
	}
	if t.numa != nil {
		if err := c.connectNUMA(ctx, *t.numa); err != nil {
			_ = c.Destroy()
			return nil, fmt.Errorf("init rank %d of %d: %w", rv.Rank, len(rv.Addrs), err)
		}
	}
	return c, nil
}

// newHier is a stream's hierarchical collectives over the model's groups:
// each host's phases in a, its arena (t.hosts), or as messages among the
// group's ranks where they share no arenas (clusters of fast links, or
// HCCL_GO_SHM_COLLECTIVES=0).
func (t *topology) newHier(ep transport.Endpoint, a *arena.Arena) (*hier.Comm, error) {
	if t.hosts != nil {
		return hier.New(ep, hier.ArenaHost(a), *t.hosts)
	}
	layout := hier.Layout{Hosts: make([][]int, len(t.groups))}
	var host hier.Host
	for h, g := range t.groups {
		layout.Hosts[h] = slices.Sorted(slices.Values(g))
		if mine := layout.Hosts[h]; len(mine) > 1 && slices.Contains(mine, ep.Rank()) {
			var err error
			if host, err = hier.MessageHost(ep, mine); err != nil {
				return nil, err
			}
		}
	}
	return hier.New(ep, host, layout)
}

// discoverTopology runs discovery over ep (before any op uses it).
// hasArena says whether this rank has shared-memory arenas with the other
// ranks of its host.
func discoverTopology(ctx context.Context, ep transport.Endpoint, rv Rendezvous, cfg Config, hasArena bool) (*topology, error) {
	n, rank := ep.Size(), ep.Rank()
	hosts := hostIDsOf(rv, n)
	t := &topology{log: newInfoLog(cfg, rank)}
	nhosts, hostOf := topo.GroupHosts(hosts)
	mine, loaded, prepErr := prepare(cfg, hosts, len(nhosts))
	mine.noArena = len(nhosts[hostOf[rank]]) > 1 && !hasArena
	var all []rankInfo
	view, err := sub.New(ep, identity(n), topoSpace)
	if err != nil {
		return nil, err
	}
	if all, err = exchangeInfo(ctx, view, mine); err != nil {
		return nil, fmt.Errorf("exchanging rank information: %w", err)
	}
	if prepErr != nil {
		return nil, prepErr
	}
	if err := agree(all); err != nil {
		return nil, err
	}
	numa := make([]int, n)
	for i, a := range all {
		numa[i] = int(a.numa)
	}

	switch {
	case loaded != nil:
		t.source, t.graph = "file", loaded
	case allWantProbe(all):
		start := time.Now()
		g, err := probeGraph(ctx, view, hosts, numa, cfg)
		if err != nil {
			return nil, err
		}
		t.source, t.graph, t.probeTime = "probe", g, time.Since(start)
	case n > denseMaxRanks && cfg.TopoDumpFile == "":
		t.source = "hosts" // no n×n graph: the model works on hostLinks
	default:
		t.source, t.graph = "hosts", nominalGraph(hosts, numa)
	}
	numaLevel := numaLevelPossible(t.graph)
	if t.source != "hosts" || len(nhosts) > 1 || numaLevel {
		params := modelParams(all, cfg)
		params.ArenaHier = arenaHier(all, nhosts, t.graph)
		params.NUMALevel = numaLevelAllowed(all, nhosts, t.graph)
		// A nominal graph's best ring is known (host after host): searching
		// for it costs O(n²) per rank and more (0.1 s of CPU at 128 ranks,
		// each rank doing the same), so only probed and loaded graphs are
		// searched, and small nominal ones, where the exact search is quick,
		// and those whose NUMA nodes may make a level (which needs the
		// graph's nodes and links).
		if t.graph != nil && (t.source != "hosts" || n <= topo.ExactRingMaxRanks || numaLevel) {
			t.model, err = topo.NewCostModel(t.graph, params)
		} else {
			t.model, err = hostModel(hosts, params)
		}
		if err != nil {
			return nil, fmt.Errorf("cost model: %w", err)
		}
		if t.compressed, err = compressedModel(t.model, cfg.Compression, params.CodecBandwidth); err != nil {
			return nil, err
		}
		if groups := t.model.Groups(); len(groups) > 0 {
			t.groups = groups // else nil: no hierarchy
		}
		if t.model.ArenaHier() {
			t.hosts = &hier.Layout{Hosts: make([][]int, len(t.groups))}
			for h, g := range t.groups {
				t.hosts.Hosts[h] = slices.Sorted(slices.Values(g)) // the arena's order
			}
		}
		if nm := t.model.NUMA(); nm != nil {
			t.numa = &hier.Layout{}
			for _, g := range nm.Groups() {
				t.numa.Hosts = append(t.numa.Hosts, slices.Sorted(slices.Values(g))) // the arena's order
			}
		}
		t.ring = t.model.Ring()
	} else {
		t.ring = identity(n)
	}
	if cfg.TopoRing != "" {
		if t.ring, err = parseRing(cfg.TopoRing, n); err != nil {
			return nil, fmt.Errorf("HCCL_GO_TOPO_RING=%q: %w", cfg.TopoRing, err)
		}
	}
	if cfg.TopoDumpFile != "" && rank == 0 {
		if err := t.graph.Save(cfg.TopoDumpFile); err != nil {
			return nil, fmt.Errorf("HCCL_GO_TOPO_DUMP_FILE: %w", err)
		}
	}
	t.logTopology(rv, cfg, len(nhosts))
	return t, nil
}

// arenaHier says whether the hierarchical collectives run with an arena
// phase inside each host (collectives/hier): every rank that shares its
// host has its arenas, and the graph (a loaded file's included) groups the
// ranks into the hosts the arenas serve.
func arenaHier(all []rankInfo, hosts [][]int, g *topo.Graph) bool {
	for _, a := range all {
		if a.noArena {
			return false
		}
	}
	if g != nil {
		graphHosts, _ := topo.GroupHosts(g.HostIDs())
		if !slices.EqualFunc(graphHosts, hosts, slices.Equal) {
			return false
		}
	}
	return topo.ArenaGroups(hosts) != nil
}

// numaLevelAllowed says whether the model may make NUMA nodes a level of
// the hierarchy (topo.Params.NUMALevel): every rank that shares its host
// has its arenas, whose subsets the level's groups work in, and the graph
// (a loaded file's included) groups the ranks into the hosts the arenas
// serve. It reads only what every rank shares, so all agree.
func numaLevelAllowed(all []rankInfo, hosts [][]int, g *topo.Graph) bool {
	if g == nil {
		return false
	}
	for _, a := range all {
		if a.noArena {
			return false
		}
	}
	graphHosts, _ := topo.GroupHosts(g.HostIDs())
	return slices.EqualFunc(graphHosts, hosts, slices.Equal)
}

// numaLevelPossible says whether g's NUMA nodes may make a level of the
// hierarchy (topo.NUMASplit.Level): a single-host communicator then gets a
// cost model too, which decides per op whether the level pays.
func numaLevelPossible(g *topo.Graph) bool {
	if g == nil {
		return false
	}
	on, _ := topo.SplitNUMA(g).Level()
	return on
}

// hostIDsOf is every rank's host identity; without identities from the
// rendezvous each rank counts as a host of its own.
func hostIDsOf(rv Rendezvous, n int) []string {
	if rv.HostIDs != nil {
		return rv.HostIDs
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "rank-" + strconv.Itoa(i)
	}
	return ids
}

// prepare is step 1: what this rank contributes to the exchange. An error
// is reported after the exchange, so that every rank fails together.
func prepare(cfg Config, hosts []string, nhosts int) (rankInfo, *topo.Graph, error) {
	mine := rankInfo{numa: int32(numaNodeOf(cfg))}
	var loaded *topo.Graph
	var err error
	if cfg.TopoFile != "" {
		loaded, err = topo.Load(cfg.TopoFile)
		switch {
		case err != nil:
			err = fmt.Errorf("HCCL_GO_TOPO_FILE: %w", err)
		case loaded.Size() != len(hosts):
			err = fmt.Errorf("HCCL_GO_TOPO_FILE %s describes %d ranks, the communicator has %d", cfg.TopoFile, loaded.Size(), len(hosts))
		default:
			mine.fileSum, err = graphSum(loaded)
		}
	}
	switch cfg.TopoProbe {
	case "1":
		mine.wantProbe = true
	case "auto":
		// Probing measures every pair: with lazy links that would link them all.
		mine.wantProbe = nhosts > 1 && len(hosts) <= probeMaxAuto && cfg.LazyLinks != "1"
	}
	if cfg.TopoFile != "" {
		mine.wantProbe = false
	}
	// Local speeds matter to the model across hosts, with measured or
	// loaded links, and where ranks on NUMA nodes of one host may make a
	// level (bound to a node of a machine of several, or placed by
	// HCCL_GO_NUMA_NODE); a single-node host skips the few ms.
	mayLevel := mine.numa >= 0 && (cfg.NUMANode >= 0 || topo.NUMANodes() > 1)
	if nhosts > 1 || cfg.TopoFile != "" || cfg.TopoProbe == "1" || mayLevel {
		mine.reduceBW, mine.copyBW = measureLocal()
		mine.codecBW = collectives.MeasureCodec(cfg.Compression, 4<<20)
	}
	mine.failed = err != nil
	return mine, loaded, err
}

// agree checks that the ranks can go on together.
func agree(all []rankInfo) error {
	for i, a := range all {
		if a.failed {
			return fmt.Errorf("rank %d failed to prepare its topology (see its error)", i)
		}
		if a.fileSum != all[0].fileSum {
			return fmt.Errorf("ranks 0 and %d disagree on HCCL_GO_TOPO_FILE (unset on one, or files that differ)", i)
		}
	}
	return nil
}

// allWantProbe: ranks probe only together (their HCCL_GO_TOPO_PROBE may
// differ; the rest then get the nominal graph).
func allWantProbe(all []rankInfo) bool {
	for _, a := range all {
		if !a.wantProbe {
			return false
		}
	}
	return true
}

// denseMaxRanks is the most ranks whose nominal graph (n² links) is built;
// beyond, the model works on hostLinks, O(n) memory.
const denseMaxRanks = 256

// nominalGraph is the graph of host identities with nominal link speeds:
// between ranks of one host on different known NUMA nodes, the nominal
// cross-NUMA link.
func nominalGraph(hosts []string, numa []int) *topo.Graph {
	g := topo.NewGraph(len(hosts))
	for i, h := range hosts {
		g.SetRank(i, topo.RankInfo{Host: h, NUMA: numa[i]})
		for j := range i {
			l := topo.Link{Latency: nominalNetLatency, Bandwidth: nominalNetBW}
			switch {
			case hosts[j] == h && numa[i] >= 0 && numa[j] >= 0 && numa[i] != numa[j]:
				l = topo.Link{Latency: nominalCrossNUMALatency, Bandwidth: nominalCrossNUMABW}
			case hosts[j] == h:
				l = topo.Link{Latency: nominalShmLatency, Bandwidth: nominalShmBW}
			}
			g.SetLink(j, i, l)
		}
	}
	return g
}

// modelParams are the cost model's local costs: the slowest rank's
// measured reduce, copy and codec speeds (a ring goes at its slowest member's
// pace), identical on every rank since they come from the exchange.
func modelParams(all []rankInfo, cfg Config) topo.Params {
	var p topo.Params
	for _, a := range all {
		if a.reduceBW > 0 && (p.ReduceBandwidth == 0 || a.reduceBW < p.ReduceBandwidth) {
			p.ReduceBandwidth = a.reduceBW
		}
		if a.copyBW > 0 && (p.CopyBandwidth == 0 || a.copyBW < p.CopyBandwidth) {
			p.CopyBandwidth = a.copyBW
		}
		if a.codecBW > 0 && (p.CodecBandwidth == 0 || a.codecBW < p.CodecBandwidth) {
			p.CodecBandwidth = a.codecBW
		}
	}
	p.ChunkBytes = cfg.ChunkBytes
	return p
}

// parseRing reads HCCL_GO_TOPO_RING: "rank" (rank order) or a permutation
// such as "0,2,1,3".
func parseRing(s string, n int) ([]int, error) {
	if strings.EqualFold(s, "rank") {
		return identity(n), nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != n {
		return nil, fmt.Errorf("%d ranks listed, the communicator has %d", len(parts), n)
	}
	ring := make([]int, n)
	seen := make([]bool, n)
	for i, p := range parts {
		r, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || r < 0 || r >= n || seen[r] {
			return nil, fmt.Errorf("%q is not a rank in [0, %d) listed once", p, n)
		}
		seen[r] = true
		ring[i] = r
	}
	return ring, nil
}

func identity(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// hostLinks is the nominal topology of host identities without an n×n
// graph, for large communicators: shared memory inside a host, the network
// across, each host's traffic sharing one NIC.
type hostLinks struct {
	hostOf []int
	hosts  int
}

func (h hostLinks) Size() int           { return len(h.hostOf) }
func (h hostLinks) NumHosts() int       { return h.hosts }
func (h hostLinks) HostOf(rank int) int { return h.hostOf[rank] }
func (h hostLinks) NIC(int) float64     { return nominalNetBW }

func (h hostLinks) Link(a, b int) topo.Link {
	if h.hostOf[a] == h.hostOf[b] {
		return topo.Link{Latency: nominalShmLatency, Bandwidth: nominalShmBW}
	}
	return topo.Link{Latency: nominalNetLatency, Bandwidth: nominalNetBW}
}

// hostModel models hostLinks: the ring visits host after host (crossing
// each host boundary once), and the hosts are the hierarchy when they
// have equal numbers of ranks, or with the arena-based hierarchy
// (Params.ArenaHier) whatever their numbers.
func hostModel(ids []string, p topo.Params) (*topo.CostModel, error) {
	hosts, hostOf := topo.GroupHosts(ids)
	ring := make([]int, 0, len(ids))
	equal := len(hosts) > 1
	for _, h := range hosts {
		ring = append(ring, h...)
		equal = equal && len(h) == len(hosts[0]) && len(h) > 1
	}
	var groups [][]int
	switch {
	case p.ArenaHier:
		groups = topo.ArenaGroups(hosts)
	case equal:
		groups = hosts
	}
	return topo.NewCostModelWith(hostLinks{hostOf: hostOf, hosts: len(hosts)}, ring, groups, p)
}
