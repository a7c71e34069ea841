package topo

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Ops the cost model predicts. nbytes always counts the whole buffer, as
// nccl-tests does: all_reduce and broadcast the buffer, all_gather the
// output (p blocks), reduce_scatter the input (p blocks).
const (
	OpAllReduce     = "allreduce"
	OpAllGather     = "allgather"
	OpReduceScatter = "reducescatter"
	OpBroadcast     = "broadcast"
)

// Algorithm names, the same as collectives.Algorithm's (HCCL_GO_ALGO).
const (
	AlgoRing  = "ring"  // along CostModel.Ring
	AlgoRD    = "rd"    // recursive doubling, in rank order
	AlgoHD    = "hd"    // recursive halving-doubling, in rank order
	AlgoHier  = "hier"  // inside groups, across groups, inside groups
	AlgoTree  = "tree"  // binomial tree from rank 0, in rank order
	AlgoChain = "chain" // pipelined chain along CostModel.Ring
	// AlgoNUMA is the arena hierarchy with a group per (host, NUMA node)
	// (Params.NUMALevel, cost_numa.go); AlgoShm the whole op in the one
	// host's arena, which it competes with on one host.
	AlgoNUMA = "numa"
	AlgoShm  = "shm"
)

// DefaultChunkBytes is the pipelining unit of the chain broadcast when
// Params.ChunkBytes is 0 (collectives.DefaultChunkBytes).
const DefaultChunkBytes = 256 << 10

// Params are the costs of local work, beside the links.
type Params struct {
	// ReduceBandwidth is how many bytes per second one rank reduces into
	// its buffer (the γ term); 0: reduction is free.
	ReduceBandwidth float64
	// CopyBandwidth is how many bytes per second one rank copies locally
	// (the copy of its input into the output buffer that out-of-place
	// all_reduce and all_gather make); 0: copies are free.
	CopyBandwidth float64
	// ChunkBytes is the pipelining unit of the chain broadcast; 0:
	// DefaultChunkBytes.
	ChunkBytes int
	// ArenaHier says that the hierarchical algorithms run with the hosts
	// as their groups, whatever their sizes, and their intra-host phases
	// in a shared-memory arena (collectives/hier): those phases cost
	// local copies and reductions (CopyBandwidth, ReduceBandwidth) rather
	// than messages over the intra-host links. Without it they run over
	// equal groups, their phases inside a group as messages
	// (hier.MessageHost).
	ArenaHier bool
	// WireRatio, when in (0, 1), models a compressed all_reduce
	// (HCCL_GO_COMPRESSION): its messages carry WireRatio bytes per byte
	// of payload (0.5 for 16-bit floats), on every hop of the ring, and on
	// the inter-host phase only of the hierarchy (ArenaHier), whose arena
	// phases stay exact. Only ring and hier compress, so they are then the
	// only all_reduce algorithms. 0 or 1: uncompressed.
	WireRatio float64
	// CodecBandwidth is how many bytes of float32 one rank encodes to the
	// wire format, or decodes from it, per second (compressed all_reduce
	// only); 0: free.
	CodecBandwidth float64
	// NUMALevel says that the arena hierarchy may also run with one group
	// per (host, NUMA node), every group of two or more ranks in an arena
	// of its own (AlgoNUMA): NewCostModel then costs it where the graph's
	// NUMA nodes make a level (NUMASplit.Level).
	NUMALevel bool
}

// CostModel predicts the time of each algorithm of each collective on one
// topology, with the α-β-γ model: a message of m bytes over a link takes
// latency + m/bandwidth, flows that cross hosts at once share their
// hosts' NICs, and reducing m bytes takes m/ReduceBandwidth. Each
// algorithm is costed step by step (see cost_algos.go).
type CostModel struct {
	t      Topology
	ring   []int
	groups [][]int // hierarchy groups in ring order; nil: no hierarchy
	p      Params

	// NUMA nodes (cost_numa.go): every rank's node (nil: unknown or one
	// per host), the links' ratio across nodes to within one, the model
	// of AlgoNUMA (nil: no level) and why, for logs.
	numaNode  []int
	numaRatio float64
	numa      *CostModel
	numaWhy   string
}

// NewCostModel models a measured or loaded graph: its ring is OrderRing's
// and its hierarchy groups HierarchyGroups', or with Params.ArenaHier the
// hosts (ArenaGroups). The graph's NUMA nodes slow the arenas that span
// them, and with Params.NUMALevel may make a level (cost_numa.go).
func NewCostModel(g *Graph, p Params) (*CostModel, error) {
	t, err := NewGraphTopology(g)
	if err != nil {
		return nil, err
	}
	groups := HierarchyGroups(g)
	if p.ArenaHier {
		hosts, _ := GroupHosts(g.HostIDs())
		groups = ArenaGroups(hosts)
	}
	m, err := NewCostModelWith(t, OrderRing(g), groups, p)
	if err != nil {
		return nil, err
	}
	if err := m.setNUMA(g); err != nil {
		return nil, fmt.Errorf("cost model: %w", err)
	}
	return m, nil
}

// ArenaGroups are the hierarchy groups of the arena-based hierarchical
// algorithms: the hosts, when there are two or more and at least one
// holds two or more ranks (else nil: no arena phase to gain from).
func ArenaGroups(hosts [][]int) [][]int {
	if len(hosts) < 2 {
		return nil
	}
	for _, h := range hosts {
		if len(h) > 1 {
			return hosts
		}
	}
	return nil
}

// NewClusterModel models a uniform synthetic cluster: its ring visits the
// ranks in order (host by host, crossing each host boundary once) and its
// hierarchy groups are the hosts.
func NewClusterModel(c Cluster, p Params) (*CostModel, error) {
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("cost model: %w", err)
	}
	ring := make([]int, c.Size())
	for i := range ring {
		ring[i] = i
	}
	return NewCostModelWith(c, ring, clusterGroups(c), p)
}

// NewCostModelWith models any topology with a given ring and hierarchy
// groups (nil: none). The groups must be disjoint, of equal size (with
// Params.ArenaHier: the hosts, of any sizes), and cover every rank; each
// group's ranks, and the groups, are put in the order the ring visits
// them, so hierarchical phases follow the ring.
func NewCostModelWith(t Topology, ring []int, groups [][]int, p Params) (*CostModel, error) {
	n := t.Size()
	if err := checkRing(ring, n); err != nil {
		return nil, fmt.Errorf("cost model: %w", err)
	}
	if p.ReduceBandwidth < 0 || p.CopyBandwidth < 0 || p.ChunkBytes < 0 || p.WireRatio < 0 || p.WireRatio > 1 || p.CodecBandwidth < 0 {
		return nil, fmt.Errorf("cost model: negative parameter in %+v", p)
	}
	if p.ChunkBytes == 0 {
		p.ChunkBytes = DefaultChunkBytes
	}
	m := &CostModel{t: t, ring: slices.Clone(ring), p: p}
	if groups != nil {
		ordered, err := orderGroups(groups, ring, p.ArenaHier)
		if err != nil {
			return nil, fmt.Errorf("cost model: %w", err)
		}
		if p.ArenaHier {
			if err := checkHostGroups(t, ordered); err != nil {
				return nil, fmt.Errorf("cost model: %w", err)
			}
		}
		m.groups = ordered
	}
	return m, nil
}

// checkHostGroups requires every group to be exactly one host's ranks.
func checkHostGroups(t Topology, groups [][]int) error {
	size := make([]int, t.NumHosts())
	for r := range t.Size() {
		size[t.HostOf(r)]++
	}
	for _, gr := range groups {
		h := t.HostOf(gr[0])
		for _, r := range gr {
			if t.HostOf(r) != h {
				return fmt.Errorf("arena hierarchy group %v spans hosts %d and %d", gr, h, t.HostOf(r))
			}
		}
		if len(gr) != size[h] {
			return fmt.Errorf("arena hierarchy group %v has %d of host %d's %d ranks", gr, len(gr), h, size[h])
		}
	}
	return nil
}

// orderGroups checks groups against ring and puts ranks and groups in ring
// order; their sizes must be equal unless uneven.
func orderGroups(groups [][]int, ring []int, uneven bool) ([][]int, error) {
	pos := make([]int, len(ring))
	for i, r := range ring {
		pos[r] = i
	}
	seen := make([]bool, len(ring))
	count := 0
	out := make([][]int, len(groups))
	for k, gr := range groups {
		if len(gr) == 0 || (len(gr) != len(groups[0]) && !uneven) {
			return nil, fmt.Errorf("hierarchy groups of unequal sizes %d and %d", len(gr), len(groups[0]))
		}
		for _, r := range gr {
			if r < 0 || r >= len(ring) || seen[r] {
				return nil, fmt.Errorf("hierarchy groups: rank %d out of range or in two groups", r)
			}
			seen[r] = true
			count++
		}
		out[k] = slices.SortedFunc(slices.Values(gr), func(a, b int) int { return pos[a] - pos[b] })
	}
	if count != len(ring) {
		return nil, fmt.Errorf("hierarchy groups cover %d of %d ranks", count, len(ring))
	}
	slices.SortStableFunc(out, func(a, b []int) int { return pos[a[0]] - pos[b[0]] })
	return out, nil
}

// Compressed is a copy of the model whose all_reduce travels compressed:
// wireRatio bytes on the wire per byte of payload (0.5 for 16-bit
// floats), encoded and decoded at codecBandwidth bytes of float32 per
// second (0: free). See Params.WireRatio.
func (m *CostModel) Compressed(wireRatio, codecBandwidth float64) (*CostModel, error) {
	if wireRatio <= 0 || wireRatio > 1 || codecBandwidth < 0 {
		return nil, fmt.Errorf("cost model: compression with wire ratio %g (want (0, 1]) and codec bandwidth %g", wireRatio, codecBandwidth)
	}
	c := *m
	c.p.WireRatio, c.p.CodecBandwidth = wireRatio, codecBandwidth
	return &c, nil
}

// compressed reports whether all_reduce travels compressed.
func (m *CostModel) compressed() bool { return m.p.WireRatio > 0 && m.p.WireRatio < 1 }

// Params are the local costs the model was built with.
func (m *CostModel) Params() Params { return m.p }

// Ring is the ring that ring and chain algorithms follow.
func (m *CostModel) Ring() []int { return slices.Clone(m.ring) }

// Groups are the hierarchy groups (nil when the hierarchical algorithms do
// not apply), each in ring order; rank Groups()[g][i] holds shard i.
func (m *CostModel) Groups() [][]int {
	out := make([][]int, len(m.groups))
	for i, gr := range m.groups {
		out[i] = slices.Clone(gr)
	}
	return out
}

// Summary describes the model in a few lines, for logs (HCCL_GO_DEBUG=INFO):
// ranks and hosts, the ring, its slowest link, the hierarchy groups.
func (m *CostModel) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ranks on %d hosts\n", m.t.Size(), m.t.NumHosts())
	slowest, latency := math.Inf(1), time.Duration(0)
	for i, a := range m.ring {
		if len(m.ring) > 1 {
			l := m.t.Link(a, m.ring[(i+1)%len(m.ring)])
			slowest = min(slowest, l.Bandwidth)
			latency += l.Latency
		}
	}
	if len(m.ring) <= 32 {
		fmt.Fprintf(&b, "ring %v", m.ring)
	} else {
		fmt.Fprintf(&b, "ring %v ... %v", m.ring[:16], m.ring[len(m.ring)-8:])
	}
	fmt.Fprintf(&b, ": slowest link %s, latency sum %v\n", FormatBandwidth(slowest), latency)
	switch {
	case m.groups == nil:
		b.WriteString("hierarchy: none\n")
	case m.p.ArenaHier && len(m.groups) <= 16:
		fmt.Fprintf(&b, "hierarchy: %d hosts, shared-memory arena inside each: %v\n", len(m.groups), m.groups)
	case m.p.ArenaHier:
		fmt.Fprintf(&b, "hierarchy: %d hosts, shared-memory arena inside each\n", len(m.groups))
	case len(m.groups) <= 16:
		fmt.Fprintf(&b, "hierarchy: %d groups of %d: %v\n", len(m.groups), len(m.groups[0]), m.groups)
	default:
		fmt.Fprintf(&b, "hierarchy: %d groups of %d\n", len(m.groups), len(m.groups[0]))
	}
	if m.numaWhy != "" {
		b.WriteString(m.numaSummary() + "\n")
	}
	return b.String()
}

// NormalizeOp maps the spellings of an op ("all_reduce", "AllReduce",
// "allreduce") to its constant.
func NormalizeOp(op string) (string, error) {
	s := strings.ToLower(strings.ReplaceAll(op, "_", ""))
	switch s {
	case OpAllReduce, OpAllGather, OpReduceScatter, OpBroadcast:
		return s, nil
	}
	return "", fmt.Errorf("unknown op %q (want allreduce, allgather, reducescatter or broadcast)", op)
}

// Algorithms lists the algorithms the model costs for op on this topology,
// in the order Choose breaks ties.
func (m *CostModel) Algorithms(op string) ([]string, error) {
	op, err := NormalizeOp(op)
	if err != nil {
		return nil, err
	}
	var algos []string
	switch {
	case op == OpAllReduce && m.compressed():
		// Only the ring and the arena hierarchy travel compressed.
		algos = []string{AlgoRing}
		if m.ArenaHier() {
			algos = append(algos, AlgoHier)
		}
		return algos, nil
	case op == OpAllReduce:
		algos = []string{AlgoRing, AlgoHD, AlgoRD}
	case op == OpAllGather || op == OpReduceScatter:
		algos = []string{AlgoRing}
	case op == OpBroadcast:
		algos = []string{AlgoChain, AlgoTree}
	}
	if m.groups != nil && (op != OpBroadcast || m.p.ArenaHier) {
		algos = append(algos, AlgoHier)
	}
	return append(algos, m.numaAlgos(op)...), nil
}

// Predict is the predicted time of algo for op on nbytes.
func (m *CostModel) Predict(op, algo string, nbytes int) (time.Duration, error) {
	algos, err := m.Algorithms(op)
	if err != nil {
		return 0, err
	}
	if !slices.Contains(algos, algo) {
		return 0, fmt.Errorf("algorithm %q does not apply to %s here (want one of %q)", algo, op, algos)
	}
	if nbytes < 0 {
		return 0, fmt.Errorf("negative size %d", nbytes)
	}
	op, _ = NormalizeOp(op)
	return seconds(m.predict(op, algo, float64(nbytes))), nil
}

// PredictRing is the time of a ring all_reduce, all_gather or
// reduce_scatter (or chain broadcast) along another ring than the model's,
// e.g. rank order, for comparison.
func (m *CostModel) PredictRing(op string, ring []int, nbytes int) (time.Duration, error) {
	op, err := NormalizeOp(op)
	if err != nil {
		return 0, err
	}
	if err := checkRing(ring, m.t.Size()); err != nil {
		return 0, err
	}
	other := *m
	other.ring = ring
	algo := AlgoRing
	if op == OpBroadcast {
		algo = AlgoChain
	}
	return seconds(other.predict(op, algo, float64(nbytes))), nil
}

// Choose returns the fastest algorithm for op on nbytes, its predicted
// time, and the prediction of every algorithm that applies. Ties go to the
// algorithm listed first by Algorithms.
func (m *CostModel) Choose(op string, nbytes int) (algo string, predicted time.Duration, all map[string]time.Duration, err error) {
	return m.ChooseFrom(op, nbytes, nil)
}

// ChooseFrom is Choose among the given algorithms only (those that do not
// apply are skipped; nil: all), for a caller that implements a subset.
func (m *CostModel) ChooseFrom(op string, nbytes int, allowed []string) (algo string, predicted time.Duration, all map[string]time.Duration, err error) {
	algos, err := m.Algorithms(op)
	if err != nil {
		return "", 0, nil, err
	}
	if allowed != nil {
		algos = slices.DeleteFunc(algos, func(a string) bool { return !slices.Contains(allowed, a) })
		if len(algos) == 0 {
			return "", 0, nil, fmt.Errorf("none of the algorithms %q applies to %s here", allowed, op)
		}
	}
	all = make(map[string]time.Duration, len(algos))
	for _, a := range algos {
		t, err := m.Predict(op, a, nbytes)
		if err != nil {
			return "", 0, nil, err
		}
		all[a] = t
		if algo == "" || t < predicted {
			algo, predicted = a, t
		}
	}
	return algo, predicted, all, nil
}

// seconds converts to a Duration, saturating.
func seconds(s float64) time.Duration {
	if s >= math.MaxInt64/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(s * 1e9))
}
