package topo

import (
	"fmt"
	"strings"
	"time"
)

// SimConfig describes one simulation: an op of Bytes on either a uniform
// Cluster or the graph in TopoFile.
type SimConfig struct {
	Op       string
	Bytes    int64
	Cluster  Cluster
	TopoFile string // when set, replaces Cluster
	Params   Params
}

// SimAlgo is one algorithm's prediction, with nccl-tests' bandwidths:
// algbw = bytes/time, busbw = algbw × the op's factor (all_reduce
// 2(p-1)/p, all_gather and reduce_scatter (p-1)/p, broadcast 1), which
// makes busbw comparable with the links' speed whatever p is.
type SimAlgo struct {
	Algo    string        `json:"algo"`
	Time    time.Duration `json:"-"`
	Seconds float64       `json:"time_s"`
	AlgBW   float64       `json:"algbw_bytes_per_s"`
	BusBW   float64       `json:"busbw_bytes_per_s"`
}

// SimResult is a simulation's answer.
type SimResult struct {
	Op       string    `json:"op"`
	Bytes    int64     `json:"bytes"`
	Ranks    int       `json:"ranks"`
	Topology string    `json:"topology"`
	Algos    []SimAlgo `json:"algos"`
	Chosen   string    `json:"chosen"`
	// Elapsed is the wall time of building the model and predicting.
	Elapsed time.Duration `json:"-"`
}

// Simulate builds the cost model of cfg's topology and predicts every
// algorithm for cfg's op and size. A Cluster needs O(ranks) memory and
// O(ranks·log ranks) time, so thousands of ranks take milliseconds; a
// topology file is a dense graph (its ring ordering bounded as in
// HeuristicRing).
func Simulate(cfg SimConfig) (SimResult, error) {
	start := time.Now()
	op, err := NormalizeOp(cfg.Op)
	if err != nil {
		return SimResult{}, fmt.Errorf("simulate: %w", err)
	}
	if cfg.Bytes < 0 {
		return SimResult{}, fmt.Errorf("simulate: negative size %d", cfg.Bytes)
	}
	var m *CostModel
	var desc string
	if cfg.TopoFile != "" {
		g, err := Load(cfg.TopoFile)
		if err != nil {
			return SimResult{}, fmt.Errorf("simulate: %w", err)
		}
		if m, err = NewCostModel(g, cfg.Params); err != nil {
			return SimResult{}, fmt.Errorf("simulate: %w", err)
		}
		hosts, _ := GroupHosts(g.HostIDs())
		desc = fmt.Sprintf("%s: %d ranks on %d hosts", cfg.TopoFile, g.Size(), len(hosts))
	} else {
		c := cfg.Cluster
		if m, err = NewClusterModel(c, cfg.Params); err != nil {
			return SimResult{}, fmt.Errorf("simulate: %w", err)
		}
		desc = fmt.Sprintf("%d hosts x %d ranks; inside a host %s, %v; between hosts %s per host NIC, %v",
			c.Hosts, c.RanksPerHost, FormatBandwidth(c.Intra.Bandwidth), c.Intra.Latency,
			FormatBandwidth(c.Inter.Bandwidth), c.Inter.Latency)
	}
	if m.compressed() && op == OpAllReduce {
		desc += fmt.Sprintf("; 16-bit floats on the wire (ring: every hop, hier: between hosts), codec %s", optionalFormat(cfg.Params.CodecBandwidth))
	}
	chosen, _, all, err := m.Choose(op, int(cfg.Bytes))
	if err != nil {
		return SimResult{}, fmt.Errorf("simulate: %w", err)
	}
	algos, _ := m.Algorithms(op)
	p := m.t.Size()
	res := SimResult{Op: op, Bytes: cfg.Bytes, Ranks: p, Topology: desc, Chosen: chosen}
	for _, a := range algos {
		d := all[a]
		s := SimAlgo{Algo: a, Time: d, Seconds: d.Seconds()}
		if d > 0 {
			s.AlgBW = float64(cfg.Bytes) / d.Seconds()
			s.BusBW = s.AlgBW * busFactor(op, p)
		}
		res.Algos = append(res.Algos, s)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// busFactor converts algbw to busbw as nccl-tests does.
func busFactor(op string, p int) float64 {
	switch op {
	case OpAllReduce:
		return 2 * float64(p-1) / float64(p)
	case OpAllGather, OpReduceScatter:
		return float64(p-1) / float64(p)
	}
	return 1
}

// Table writes the result as a table, nccl-tests style.
func (r SimResult) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of %s (%d B) over %d ranks\n", r.Op, FormatBytes(r.Bytes), r.Bytes, r.Ranks)
	fmt.Fprintf(&b, "topology: %s\n", r.Topology)
	fmt.Fprintf(&b, "%-8s %12s %14s %14s\n", "algo", "time", "algbw", "busbw")
	for _, a := range r.Algos {
		mark := ""
		if a.Algo == r.Chosen {
			mark = "  <- chosen"
		}
		fmt.Fprintf(&b, "%-8s %12s %14s %14s%s\n", a.Algo, FormatDuration(a.Time), FormatBandwidth(a.AlgBW), FormatBandwidth(a.BusBW), mark)
	}
	fmt.Fprintf(&b, "chosen: %s\n", r.Chosen)
	return b.String()
}

// optionalFormat formats a bandwidth that 0 leaves unmodelled.
func optionalFormat(bw float64) string {
	if bw == 0 {
		return "free"
	}
	return FormatBandwidth(bw)
}
