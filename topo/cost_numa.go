package topo

import (
	"fmt"
	"time"
)

// NUMA nodes as a level of the hierarchy. An arena among ranks on two
// NUMA nodes moves part of its bytes across the link between them
// (numaSlowdown stretches its phases). With Params.NUMALevel, the model
// also costs AlgoNUMA: the arena hierarchy (collectives/hier) with one
// group per (host, NUMA node), the arena phase inside each group and the
// one exchange between groups over the links (shared memory messages
// across NUMA nodes of a host, the network across hosts). On one host it
// competes with AlgoShm, the whole op in the host's arena. The level
// exists when some host spans two NUMA nodes, its links across them are
// at most NUMASlowRatio as fast as within one (NUMASplit.Level), and the
// model chooses it for some op of 1 MiB to 1 GiB (numaPays); which of the
// algorithms runs is then chosen per op and size, like any other.

// setNUMA takes the graph's NUMA nodes into the model: the slowdown of
// arenas that span nodes, and with Params.NUMALevel the sub-model of
// AlgoNUMA when the split makes a level.
func (m *CostModel) setNUMA(g *Graph) error {
	s := SplitNUMA(g)
	if s.Groups == nil {
		m.numaWhy = "off, because " + levelWhy(s)
		return nil
	}
	m.numaNode = make([]int, g.Size())
	for r := range m.numaNode {
		m.numaNode[r] = g.Rank(r).NUMA
	}
	m.numaRatio = s.Ratio
	on, why := s.Level()
	switch {
	case !on:
		m.numaWhy = "off, because " + why
		return nil
	case !m.p.NUMALevel:
		m.numaWhy = "off, because the hosts' ranks have no shared-memory arenas for NUMA groups (shared-memory collectives off, or the topology's hosts are not the ranks' hosts; " + why + ")"
		return nil
	}
	groups, err := orderGroups(s.Groups, m.ring, true)
	if err != nil {
		return fmt.Errorf("NUMA groups: %w", err)
	}
	sub := *m
	sub.t = shmFloor{m.t}
	sub.groups, sub.numa = groups, nil
	sub.p.ArenaHier, sub.p.NUMALevel = true, false
	m.numa = &sub
	if !m.numaPays() {
		m.numa = nil
		m.numaWhy = fmt.Sprintf("off, because %s, but the model predicts the level slower than the other algorithms for every op up to %s", why, FormatBytes(numaPaysMax))
		return nil
	}
	m.numaWhy = fmt.Sprintf("on, because %s: %d (host, NUMA node) groups, taken per op and size where the model predicts them faster", why, len(groups))
	return nil
}

// numaPaysMax is the largest size numaPays tries.
const numaPaysMax = 1 << 30

// numaPays says whether the model chooses AlgoNUMA for some op of 1 MiB
// to numaPaysMax (on one host against AlgoShm, which runs every op there
// that the level does not): without, the level's arenas would be memory
// for nothing.
func (m *CostModel) numaPays() bool {
	var among []string // nil: all
	if m.t.NumHosts() == 1 {
		among = []string{AlgoShm, AlgoNUMA}
	}
	for _, op := range []string{OpAllReduce, OpAllGather, OpReduceScatter, OpBroadcast} {
		for n := 1 << 20; n <= numaPaysMax; n *= 4 {
			if algo, _, _, err := m.ChooseFrom(op, n, among); err == nil && algo == AlgoNUMA {
				return true
			}
		}
	}
	return false
}

// levelWhy is NUMASplit.Level's reason.
func levelWhy(s NUMASplit) string {
	_, why := s.Level()
	return why
}

// NUMA is the model of AlgoNUMA: the arena hierarchy whose groups are the
// (host, NUMA node) groups, in ring order (nil without the level).
func (m *CostModel) NUMA() *CostModel { return m.numa }

// NUMALevel says, in words for a log, whether NUMA nodes are a level of
// the hierarchy and why ("on, because ..." or "off, because ...").
func (m *CostModel) NUMALevel() string {
	if m.numaWhy == "" {
		return "off, because the model has no graph of NUMA nodes"
	}
	return m.numaWhy
}

// numaAlgos are the algorithms the NUMA level adds for op: on one host
// the whole op in the host's arena and AlgoNUMA (ties go to the arena),
// across hosts AlgoNUMA.
func (m *CostModel) numaAlgos(op string) []string {
	if m.numa == nil || (op == OpAllReduce && m.compressed()) {
		return nil
	}
	if m.t.NumHosts() == 1 {
		return []string{AlgoShm, AlgoNUMA}
	}
	return []string{AlgoNUMA}
}

// predictNUMA is predict for AlgoShm and AlgoNUMA (ok false for others).
func (m *CostModel) predictNUMA(op, algo string, n float64) (float64, bool) {
	switch algo {
	case AlgoNUMA:
		if m.numa == nil {
			return 0, false
		}
		return m.numa.predict(op, AlgoHier, n), true
	case AlgoShm:
		if m.numa == nil || m.t.NumHosts() != 1 {
			return 0, false
		}
		return m.wholeArena(op, n), true
	}
	return 0, false
}

// wholeArena is op of n bytes in one arena of every rank of the one host
// (collectives/intra), its phases stretched by the NUMA nodes it spans:
// all_reduce a reduce-scatter and an all-gather, all_gather an
// all-gather, reduce_scatter a reduce-scatter, broadcast a copy; with the
// out-of-place copies predict counts for every algorithm.
func (m *CostModel) wholeArena(op string, n float64) float64 {
	p := m.t.Size()
	all := make([]int, p)
	for i := range all {
		all[i] = i
	}
	slow := numaSlowdown(all, m.numaNode, m.numaRatio)
	switch op {
	case OpAllReduce:
		return m.copyTime(n) + m.arenaScatterPhase(n, p, slow) + m.arenaCopyPhase(n, p, slow)
	case OpAllGather:
		return m.copyTime(n/float64(p)) + m.arenaCopyPhase(n, p, slow)
	case OpReduceScatter:
		return m.arenaScatterPhase(n, p, slow)
	default:
		return m.arenaCopyPhase(n, p, slow)
	}
}

// numaSummary is the model's line on the NUMA level, for Summary.
func (m *CostModel) numaSummary() string {
	if m.numa != nil && len(m.numa.groups) <= 16 {
		return fmt.Sprintf("NUMA level: %s %v", m.NUMALevel(), m.numa.groups)
	}
	return "NUMA level: " + m.NUMALevel()
}

// shmFloor is a topology whose links inside a host cost at least an arena
// operation's latency: a message between processes of one host waits on
// a flag in shared memory as an arena operation does, whatever a file or
// a nominal graph says of the link. The NUMA level's exchange between
// groups is such messages, which its predictions must not take as
// cheaper than the arena work they replace.
type shmFloor struct{ Topology }

func (f shmFloor) Link(a, b int) Link {
	l := f.Topology.Link(a, b)
	if f.HostOf(a) == f.HostOf(b) {
		l.Latency = max(l.Latency, time.Duration(arenaOpSeconds*float64(time.Second)))
	}
	return l
}
