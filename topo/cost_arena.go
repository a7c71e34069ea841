package topo

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// The hierarchical algorithms with Params.ArenaHier (collectives/hier).
// The groups are the hosts, R_h ranks on host h, H hosts. The intra-host
// phases run in a shared-memory arena: they cost the local copies and
// reductions each rank makes there (collectives/intra/ALGORITHMS.md) and
// a fixed cost per arena operation, not messages over the intra-host
// links. The one inter-host phase runs as flows over the links, sharing
// the hosts' NICs. A host of one rank has no arena phase.

// arenaOpSeconds is the fixed cost of one arena operation: posts and
// waits on flags in shared memory, a few microseconds on a loaded host.
const arenaOpSeconds = 5e-6

// ArenaHier reports whether the model's hierarchical algorithms are the
// arena-based ones (Params.ArenaHier with hosts to group).
func (m *CostModel) ArenaHier() bool { return m.p.ArenaHier && m.groups != nil }

// arenaScatterPhase is an arena reduce-scatter of n bytes among r ranks:
// each publishes the (r-1)/r·n others reduce and reduces its n/r over r
// inputs; slow (numaSlowdown, 1 within one NUMA node) stretches the
// copies and reductions of an arena whose ranks span NUMA nodes.
func (m *CostModel) arenaScatterPhase(n float64, r int, slow float64) float64 {
	if r == 1 {
		return 0
	}
	f := float64(r-1) / float64(r) * n
	return arenaOpSeconds + slow*(m.copyTime(f)+m.reduceTime(f))
}

// arenaCopyPhase is an arena all-gather (or broadcast) of n bytes among r
// ranks: each rank copies about n through shared memory (slow: as in
// arenaScatterPhase).
func (m *CostModel) arenaCopyPhase(n float64, r int, slow float64) float64 {
	if r == 1 {
		return 0
	}
	return arenaOpSeconds + slow*m.copyTime(n)
}

// slowestHost is the largest cost(size of group, its NUMA slowdown) over
// the groups.
func (m *CostModel) slowestHost(cost func(r int, slow float64) float64) float64 {
	worst := 0.0
	for _, g := range m.groups {
		worst = max(worst, cost(len(g), numaSlowdown(g, m.numaNode, m.numaRatio)))
	}
	return worst
}

// HierRoundBytes is the size of the rounds of the arena hierarchy's
// all_reduce and all_gather where their inter-host phase dominates
// (ArenaRounds).
const HierRoundBytes = 4 << 20

// hierRoundsFactor: a collective runs in rounds when its inter-host phase
// is predicted at least this many times as long as its arena phases. Then
// the arena phases hide behind the network, which needs little CPU; where
// they are comparable, both are bound by the CPU and the rounds would
// compete for it (measured with four ranks on two cores:
// collectives/hier/rounds.go).
const hierRoundsFactor = 2

// ArenaRounds is the Options.RoundBytes of the arena hierarchy's op
// (OpAllReduce or OpAllGather) of nbytes (collectives/hier):
// HierRoundBytes when the buffer makes two rounds or more, the inter-host
// phase dominates, and the rounds are predicted faster (each round pays
// the inter-host phase's latency again: across many hosts that outweighs
// what the overlap hides); else 0 (one round). The same on every rank.
func (m *CostModel) ArenaRounds(op string, nbytes int) int {
	if !m.ArenaHier() || nbytes < 2*HierRoundBytes || (op != OpAllReduce && op != OpAllGather) {
		return 0
	}
	n := float64(nbytes)
	arena, inter := m.arenaParts(op, n)
	if inter < hierRoundsFactor*arena || m.roundsTime(op, n, HierRoundBytes) >= arena+inter {
		return 0
	}
	return HierRoundBytes
}

// roundsTime is op of n bytes in rounds of rb bytes: the inter-host
// phases of the rounds one after the other, the arena phases hidden
// behind them but for one round's worth (the first round's reduce-scatter
// and the last one's all-gather, or the last round's all-gather).
func (m *CostModel) roundsTime(op string, n float64, rb int) float64 {
	k := math.Floor(n / float64(rb))
	arena, inter := m.arenaParts(op, n/k)
	return k*inter + arena
}

// ArenaPhases is the predicted time of the arena hierarchy's op
// (OpAllReduce or OpAllGather) of nbytes in its arena phases and in its
// inter-host phase, one after the other (ok false without the arena
// hierarchy, or for another op): what overlapping them could save.
func (m *CostModel) ArenaPhases(op string, nbytes int) (arena, inter time.Duration, ok bool) {
	if !m.ArenaHier() || nbytes < 0 || (op != OpAllReduce && op != OpAllGather) {
		return 0, 0, false
	}
	a, i := m.arenaParts(op, float64(nbytes))
	return seconds(a), seconds(i), true
}

// arenaInRounds is the time of op of n bytes: its phases one after the
// other, or in rounds where ArenaRounds cuts them.
func (m *CostModel) arenaInRounds(op string, n float64) float64 {
	if rb := m.ArenaRounds(op, int(n)); rb > 0 {
		return m.roundsTime(op, n, rb)
	}
	arena, inter := m.arenaParts(op, n)
	return arena + inter
}

// arenaParts are op's arena phases and inter-host phase on n bytes.
func (m *CostModel) arenaParts(op string, n float64) (arena, inter float64) {
	if op == OpAllGather {
		return m.arenaAllGatherParts(n)
	}
	return m.arenaAllReduceParts(n)
}

// arenaAllReduce: reduce-scatter in each host, all_reduce of every
// segment across hosts among its owners (all at once), all-gather in each
// host; in rounds where the inter-host phase dominates.
func (m *CostModel) arenaAllReduce(n float64) float64 { return m.arenaInRounds(OpAllReduce, n) }

// arenaAllReduceParts are arenaAllReduce's arena phases (reduce-scatter
// and all-gather) and its inter-host phase. Compressed, the segments'
// rings carry WireRatio of their bytes and encode and decode them; the
// arena phases stay exact.
func (m *CostModel) arenaAllReduceParts(n float64) (arena, inter float64) {
	h := len(m.groups)
	rings, chunks := m.segmentRings(n)
	for i := range chunks {
		chunks[i] = m.wire(chunks[i])
	}
	minR := len(m.groups[0])
	for _, g := range m.groups {
		minR = min(minR, len(g))
	}
	piece := n / float64(minR) // the largest piece a rank carries across
	arena = m.slowestHost(func(r int, slow float64) float64 { return m.arenaScatterPhase(n, r, slow) }) +
		m.slowestHost(func(r int, slow float64) float64 { return m.arenaCopyPhase(n, r, slow) })
	inter = m.ringsPhaseSized(rings, 2*(h-1), chunks) + m.reduceTime(float64(h-1)/float64(h)*piece) + m.ringCodecTime(h, piece)
	return arena, inter
}

// arenaAllGather (n: the output): every rank sends its block to one rank
// of every other host at once, then each host all-gathers n in its arena
// and copies the blocks into place; in rounds where the exchange
// dominates.
func (m *CostModel) arenaAllGather(n float64) float64 { return m.arenaInRounds(OpAllGather, n) }

func (m *CostModel) arenaAllGatherParts(n float64) (arena, inter float64) {
	inter = m.directExchange(n/float64(m.t.Size()), false)
	arena = m.slowestHost(func(r int, slow float64) float64 {
		if r == 1 {
			return 0 // blocks land in place
		}
		return m.arenaCopyPhase(n, r, slow) + m.copyTime(n)
	})
	return arena, inter
}

// arenaReduceScatter (n: the input): each host packs and reduce-scatters
// n in its arena, then every rank sends each host partial it holds to the
// block's rank at once, which reduces the H partials of its block.
func (m *CostModel) arenaReduceScatter(n float64) float64 {
	b := n / float64(m.t.Size())
	t := m.slowestHost(func(r int, slow float64) float64 {
		if r == 1 {
			return 0
		}
		return m.copyTime(n) + m.arenaScatterPhase(n, r, slow) // pack, reduce-scatter
	})
	return t + m.directExchange(b, true) + m.reduceTime(float64(len(m.groups)-1)*b)
}

// maxDirectFlows is the most flows directExchange costs one by one (a
// variable for tests).
var maxDirectFlows = 1 << 16

// directExchange is one step in which every rank sends b bytes to its
// partner on every other host at once (reverse: receives them from it),
// sharing the NICs. Beyond maxDirectFlows flows it is costed per host
// rather than per flow, from the link between the first ranks of the
// first two hosts: what crosses each NIC, or one flow's link if slower.
func (m *CostModel) directExchange(b float64, reverse bool) float64 {
	p, h := m.t.Size(), len(m.groups)
	if p*(h-1) > maxDirectFlows {
		l := m.t.Link(m.groups[0][0], m.groups[1][0])
		worst := b / l.Bandwidth
		for _, g := range m.groups {
			nic := m.t.NIC(m.t.HostOf(g[0]))
			sent, received := float64(h-1)*float64(len(g))*b, float64(p-len(g))*b
			worst = max(worst, sent/nic, received/nic)
		}
		return l.Latency.Seconds() + worst
	}
	var flows []flow
	for g := range m.groups {
		for r, partner := range m.partners(g) {
			switch {
			case partner == r:
			case reverse:
				flows = append(flows, flow{partner, r, b})
			default:
				flows = append(flows, flow{r, partner, b})
			}
		}
	}
	return m.stepTime(flows)
}

// arenaBroadcast from rank 0: the host leaders broadcast across hosts (a
// tree or a chain, whichever is faster), then each broadcasts n in its
// arena.
func (m *CostModel) arenaBroadcast(n float64) float64 {
	root := m.hostIndex()[0]
	leaders := make([]int, len(m.groups))
	local0 := slices.Index(slices.Sorted(slices.Values(m.groups[root])), 0)
	for i := range leaders {
		g := slices.Sorted(slices.Values(m.groups[(root+i)%len(m.groups)]))
		leaders[i] = g[local0%len(g)]
	}
	across := min(m.chainBroadcast(leaders, n), m.treeBroadcast(leaders, n))
	return across + m.slowestHost(func(r int, slow float64) float64 { return m.arenaCopyPhase(n, r, slow) })
}

// hostIndex maps every rank to its group.
func (m *CostModel) hostIndex() []int {
	of := make([]int, m.t.Size())
	for h, g := range m.groups {
		for _, r := range g {
			of[r] = h
		}
	}
	return of
}

// partners pairs host h's ranks with the others' for a direct exchange,
// as collectives/hier does: the k-th rank of another host, in rank order,
// goes to h's local rank k modulo its size (its own ranks to themselves).
func (m *CostModel) partners(h int) []int {
	of := m.hostIndex()
	mine := slices.Sorted(slices.Values(m.groups[h]))
	out := make([]int, len(of))
	k := 0
	for r, hh := range of {
		if hh == h {
			out[r] = r
			continue
		}
		out[r] = mine[k%len(mine)]
		k++
	}
	return out
}

// segmentRings are the inter-host all_reduces of collectives/hier: each
// host splits the buffer evenly among its ranks (in rank order), the
// buffer is cut at every host's piece boundaries, and each segment is
// all_reduced among its owners, one per host, in host order. chunks[i] is
// what a step of segment i's ring carries: its bytes over H.
func (m *CostModel) segmentRings(n float64) (rings [][]int, chunks []float64) {
	type cut struct{ k, r int } // the fraction k/r of the buffer
	var cuts []cut
	for _, g := range m.groups {
		for k := range len(g) + 1 {
			cuts = append(cuts, cut{k, len(g)})
		}
	}
	less := func(a, b cut) int { return cmp.Compare(a.k*b.r, b.k*a.r) }
	slices.SortFunc(cuts, less)
	cuts = slices.CompactFunc(cuts, func(a, b cut) bool { return less(a, b) == 0 })
	sorted := make([][]int, len(m.groups))
	for h, g := range m.groups {
		sorted[h] = slices.Sorted(slices.Values(g))
	}
	h := float64(len(m.groups))
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := float64(cuts[i].k)/float64(cuts[i].r), float64(cuts[i+1].k)/float64(cuts[i+1].r)
		ring := make([]int, len(m.groups))
		for g, ranks := range sorted {
			ring[g] = ranks[int((lo+hi)/2*float64(len(ranks)))]
		}
		rings = append(rings, ring)
		chunks = append(chunks, (hi-lo)*n/h)
	}
	return rings, chunks
}
