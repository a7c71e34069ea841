package topo

// A step of an algorithm is a set of flows that run at the same time.
type flow struct {
	src, dst int
	bytes    float64
}

// rates is each flow's bandwidth while all of flows run: its link's, or
// less when it crosses hosts and its share of a host's NIC (split equally
// among the flows leaving, or entering, that host) is smaller.
func (m *CostModel) rates(flows []flow) []float64 {
	h := m.t.NumHosts()
	out, in := make([]int32, h), make([]int32, h)
	for _, f := range flows {
		if hs, hd := m.t.HostOf(f.src), m.t.HostOf(f.dst); hs != hd {
			out[hs]++
			in[hd]++
		}
	}
	r := make([]float64, len(flows))
	for i, f := range flows {
		bw := m.t.Link(f.src, f.dst).Bandwidth
		if hs, hd := m.t.HostOf(f.src), m.t.HostOf(f.dst); hs != hd {
			bw = min(bw, m.t.NIC(hs)/float64(out[hs]), m.t.NIC(hd)/float64(in[hd]))
		}
		r[i] = bw
	}
	return r
}

// stepTime is the time of a step: its slowest flow, latency included.
func (m *CostModel) stepTime(flows []flow) float64 {
	worst := 0.0
	for i, r := range m.rates(flows) {
		f := flows[i]
		worst = max(worst, m.t.Link(f.src, f.dst).Latency.Seconds()+f.bytes/r)
	}
	return worst
}

// ringsPhase is the time of `steps` steps of rings that run at once, each
// rank sending chunk bytes to its successor per step (a reduce-scatter or
// all-gather is k-1 steps of a k-ring, an all_reduce 2(k-1)). Steps are
// pipelined: a ring's pace is its slowest link, and its latency adds up
// along the dependency chain, which goes steps/k times around the ring:
//
//	time(ring) = steps/k · Σ latency + steps · chunk / min rate
//
// (for equal links, steps · (α + chunk·β)). The phase ends with its
// slowest ring.
func (m *CostModel) ringsPhase(rings [][]int, steps int, chunk float64) float64 {
	chunks := make([]float64, len(rings))
	for i := range chunks {
		chunks[i] = chunk
	}
	return m.ringsPhaseSized(rings, steps, chunks)
}

// ringsPhaseSized is ringsPhase with chunks[i] bytes per step on ring i.
func (m *CostModel) ringsPhaseSized(rings [][]int, steps int, chunks []float64) float64 {
	var flows []flow
	for k, ring := range rings {
		if len(ring) < 2 {
			continue
		}
		for i, a := range ring {
			flows = append(flows, flow{a, ring[(i+1)%len(ring)], chunks[k]})
		}
	}
	r := m.rates(flows)
	worst, at := 0.0, 0
	for ri, ring := range rings {
		k := len(ring)
		if k < 2 {
			continue
		}
		chunk := chunks[ri]
		latency, slowest := 0.0, r[at]
		for i := 0; i < k; i++ {
			f := flows[at+i]
			latency += m.t.Link(f.src, f.dst).Latency.Seconds()
			slowest = min(slowest, r[at+i])
		}
		at += k
		t := float64(steps)/float64(k)*latency + float64(steps)*chunk/slowest
		worst = max(worst, t)
	}
	return worst
}
