package topo

import "math"

// The algorithms, costed step by step on the model's topology. p ranks,
// n bytes; with hierarchy, H groups of R ranks.

func (m *CostModel) predict(op, algo string, n float64) float64 {
	if t, ok := m.predictNUMA(op, algo, n); ok {
		return t
	}
	switch op {
	case OpAllReduce:
		return m.copyTime(n) + m.allReduce(algo, n)
	case OpAllGather:
		return m.copyTime(n/float64(m.t.Size())) + m.allGather(algo, n)
	case OpReduceScatter:
		return m.reduceScatter(algo, n)
	default:
		return m.broadcast(algo, n)
	}
}

func (m *CostModel) reduceTime(n float64) float64 {
	if m.p.ReduceBandwidth == 0 {
		return 0
	}
	return n / m.p.ReduceBandwidth
}

// wire is what n bytes of an all_reduce's payload take on the wire.
func (m *CostModel) wire(n float64) float64 {
	if m.compressed() {
		return n * m.p.WireRatio
	}
	return n
}

// ringCodecTime is what a compressed ring all_reduce of n bytes among k
// ranks spends encoding and decoding on each rank (0 uncompressed): every
// rank encodes k blocks of n/k (its input, k-2 re-encoded partials and
// the owner's rounding) and decodes 2k-1 (k-1 partials, the owner's own
// block, k-1 blocks of the all-gather).
func (m *CostModel) ringCodecTime(k int, n float64) float64 {
	if !m.compressed() || m.p.CodecBandwidth == 0 || k < 2 {
		return 0
	}
	return float64(3*k-1) / float64(k) * n / m.p.CodecBandwidth
}

func (m *CostModel) copyTime(n float64) float64 {
	if m.p.CopyBandwidth == 0 {
		return 0
	}
	return n / m.p.CopyBandwidth
}

func (m *CostModel) allReduce(algo string, n float64) float64 {
	p := float64(m.t.Size())
	switch algo {
	case AlgoRing:
		// Reduce-scatter then all-gather along the ring: 2(p-1) steps of n/p
		// (compressed: of n/p·WireRatio on the wire, plus the codec).
		return m.ringsPhase([][]int{m.ring}, 2*(m.t.Size()-1), m.wire(n/p)) + m.reduceTime((p-1)/p*n) + m.ringCodecTime(m.t.Size(), n)
	case AlgoRD:
		return m.recursive(n, false)
	case AlgoHD:
		return m.recursive(n, true)
	default: // AlgoHier
		if m.p.ArenaHier {
			return m.arenaAllReduce(n)
		}
		groups, cross := m.groups, m.crossRings()
		r, h := float64(len(groups[0])), float64(len(groups))
		// Reduce-scatter in each group: shard i (n/R) summed on member i.
		t := m.ringsPhase(groups, len(groups[0])-1, n/r) + m.reduceTime((r-1)/r*n)
		// All_reduce of each shard across groups, among the members that
		// hold it: R rings of H ranks, all at once.
		t += m.ringsPhase(cross, 2*(len(groups)-1), n/(r*h)) + m.reduceTime((h-1)/h*n/r)
		// All-gather in each group.
		return t + m.ringsPhase(groups, len(groups[0])-1, n/r)
	}
}

// crossRings are the rings across groups: ring i joins member i of every
// group, in group order.
func (m *CostModel) crossRings() [][]int {
	rings := make([][]int, len(m.groups[0]))
	for i := range rings {
		rings[i] = make([]int, len(m.groups))
		for g, gr := range m.groups {
			rings[i][g] = gr[i]
		}
	}
	return rings
}

// recursive is recursive doubling (halving false: log2 q exchanges of the
// whole buffer) or halving-doubling (halving then doubling, the exchange
// at distance d carrying n·d/q), in rank order, with the fold of
// collectives: q is the largest power of two <= p, ranks 2i and 2i+1 for
// i < p-q combine first and split at the end. Steps are costed one after
// the other: where halving-doubling runs pipelined (final ranges of a chunk
// or more) and consecutive partners sit on separate links, its steps
// overlap, and this is an upper bound.
func (m *CostModel) recursive(n float64, halving bool) float64 {
	p := m.t.Size()
	q := 1
	for q*2 <= p {
		q *= 2
	}
	extra := p - q
	real := func(v int) int {
		if v < extra {
			return 2*v + 1
		}
		return v + extra
	}
	t := 0.0
	if extra > 0 {
		t += m.stepTime(pairFlows(extra, n, false)) + m.reduceTime(n)
	}
	exchange := func(d int, bytes float64) float64 {
		flows := make([]flow, 0, q)
		for v := 0; v < q; v++ {
			flows = append(flows, flow{real(v), real(v ^ d), bytes})
		}
		return m.stepTime(flows)
	}
	if !halving {
		for d := 1; d < q; d *= 2 {
			t += exchange(d, n) + m.reduceTime(n)
		}
	} else {
		for d := q / 2; d >= 1; d /= 2 { // reduce-scatter by halving
			b := n * float64(d) / float64(q)
			t += exchange(d, b) + m.reduceTime(b)
		}
		for d := 1; d < q; d *= 2 { // all-gather by doubling
			t += exchange(d, n*float64(d)/float64(q))
		}
	}
	if extra > 0 {
		t += m.stepTime(pairFlows(extra, n, true))
	}
	return t
}

// pairFlows are the fold (2i -> 2i+1) or unfold (2i+1 -> 2i) flows.
func pairFlows(extra int, n float64, back bool) []flow {
	flows := make([]flow, extra)
	for i := range flows {
		flows[i] = flow{2 * i, 2*i + 1, n}
		if back {
			flows[i] = flow{2*i + 1, 2 * i, n}
		}
	}
	return flows
}

func (m *CostModel) allGather(algo string, n float64) float64 {
	p := m.t.Size()
	if algo == AlgoRing {
		return m.ringsPhase([][]int{m.ring}, p-1, n/float64(p))
	}
	if m.p.ArenaHier {
		return m.arenaAllGather(n)
	}
	// Hierarchical: gather the H blocks of one's shard index across groups,
	// then all-gather the groups' n/R in each group.
	groups := m.groups
	return m.ringsPhase(m.crossRings(), len(groups)-1, n/float64(p)) +
		m.ringsPhase(groups, len(groups[0])-1, n/float64(len(groups[0])))
}

func (m *CostModel) reduceScatter(algo string, n float64) float64 {
	p := float64(m.t.Size())
	if algo == AlgoRing {
		return m.ringsPhase([][]int{m.ring}, m.t.Size()-1, n/p) + m.reduceTime((p-1)/p*n)
	}
	if m.p.ArenaHier {
		return m.arenaReduceScatter(n)
	}
	// Hierarchical: reduce-scatter in each group into n/R shards, then
	// reduce-scatter each shard across groups into n/p blocks.
	groups := m.groups
	r, h := float64(len(groups[0])), float64(len(groups))
	return m.ringsPhase(groups, len(groups[0])-1, n/r) + m.reduceTime((r-1)/r*n) +
		m.ringsPhase(m.crossRings(), len(groups)-1, n/p) + m.reduceTime((h-1)/h*n/r)
}

func (m *CostModel) broadcast(algo string, n float64) float64 {
	p := m.t.Size()
	if p < 2 || n == 0 {
		return 0
	}
	switch {
	case algo == AlgoTree:
		return m.treeBroadcast(identityRanks(p), n)
	case algo == AlgoHier: // only with ArenaHier (Algorithms)
		return m.arenaBroadcast(n)
	}
	// Chain along the ring from rank 0.
	start := 0
	for i, r := range m.ring {
		if r == 0 {
			start = i
		}
	}
	chain := make([]int, p)
	for i := range chain {
		chain[i] = m.ring[(start+i)%p]
	}
	return m.chainBroadcast(chain, n)
}

// treeBroadcast is a binomial tree over ranks from ranks[0]: at distance
// d = 2^(L-1) ... 1, every position that has the data and is a multiple
// of 2d sends it on.
func (m *CostModel) treeBroadcast(ranks []int, n float64) float64 {
	p := len(ranks)
	if p < 2 || n == 0 {
		return 0
	}
	t := 0.0
	for d := 1 << (bitsFor(p) - 1); d >= 1; d /= 2 {
		var flows []flow
		for v := 0; v+d < p; v += 2 * d {
			flows = append(flows, flow{ranks[v], ranks[v+d], n})
		}
		t += m.stepTime(flows)
	}
	return t
}

// chainBroadcast is a chain along ranks from ranks[0], pipelined in
// chunks: the first chunk crosses every hop, the others follow at the
// slowest hop's pace.
func (m *CostModel) chainBroadcast(ranks []int, n float64) float64 {
	p := len(ranks)
	if p < 2 || n == 0 {
		return 0
	}
	c := min(float64(m.p.ChunkBytes), n)
	chunks := math.Ceil(n / c)
	flows := make([]flow, p-1)
	for i := range flows {
		flows[i] = flow{ranks[i], ranks[i+1], c}
	}
	sum, slowest := 0.0, 0.0
	for i, r := range m.rates(flows) {
		hop := m.t.Link(flows[i].src, flows[i].dst).Latency.Seconds() + c/r
		sum += hop
		slowest = max(slowest, hop)
	}
	return sum + (chunks-1)*slowest
}

func identityRanks(p int) []int {
	ranks := make([]int, p)
	for i := range ranks {
		ranks[i] = i
	}
	return ranks
}

// bitsFor is ceil(log2 p) for p >= 1 (0 for p = 1).
func bitsFor(p int) int {
	b := 0
	for 1<<b < p {
		b++
	}
	return b
}
