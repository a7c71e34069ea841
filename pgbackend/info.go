package pgbackend

import (
	"encoding/json"
	"fmt"
	"runtime"
)

// Info describes a communicator for humans and tools (python -m
// torch_hccl_go.info, HCCL_GO_DEBUG=INFO).
type Info struct {
	Rank           int               `json:"rank"`
	Size           int               `json:"size"`
	Transports     []string          `json:"transports"` // per peer
	Addrs          []string          `json:"addrs"`      // per rank: the address it published
	TimeoutMs      int64             `json:"timeout_ms"`
	Algo           map[string]string `json:"algo_override"`
	StreamsPerPeer int               `json:"streams_per_peer"`
	ChunkBytes     int               `json:"chunk_bytes"`
	Sequence       uint64            `json:"sequence"`
	// GoMaxProcs is the Go runtime's GOMAXPROCS when asked: process-wide,
	// set by the C library's policy (HCCL_GO_MAXPROCS).
	GoMaxProcs int `json:"gomaxprocs"`
	// FastLane is how small blocking all_reduces run (lane.go): "go" in
	// the fast lane, "c" in the C library's fast lane (set by export),
	// "off" queued like any op.
	FastLane string `json:"fast_lane"`
	// FastLaneOps counts the ops the C fast lane ran from start to end,
	// by kind (allreduce, broadcast, allgather, barrier; set by export);
	// ops it handed over to Go are not counted.
	FastLaneOps map[string]int64 `json:"fast_lane_ops,omitempty"`
	// SingleCopy and SingleCopyGather are what the ranks agreed on
	// reading peers' buffers in place on the default stream's arena, for
	// all_reduce and for all_gather and all_to_all (intra.SingleCopy.State: "undecided",
	// "on", "off (why)"); "off" without an arena.
	SingleCopy       string `json:"single_copy"`
	SingleCopyGather string `json:"single_copy_gather"`
	// Split describes a communicator split from another (split.go); nil
	// for one that connected its own links.
	Split *SplitInfo `json:"split,omitempty"`
	// NUMAGroups are the (host, NUMA node) groups of the NUMA level
	// (numa.go); absent without it.
	NUMAGroups [][]int `json:"numa_groups,omitempty"`
	// Model is what the cost model that chooses the algorithms was built
	// from (nil without one: a single host, a split, a communicator built
	// by New), so that a tool can rebuild it (hccl-go-topo check).
	Model *ModelInfo `json:"model,omitempty"`
}

// ModelInfo describes a communicator's cost model: its topology's source
// (the graph itself is HCCL_GO_TOPO_DUMP_FILE's), the measured local
// speeds in bytes/s (0: not measured) and whether the hierarchy runs in
// the shared-memory arenas.
type ModelInfo struct {
	Source    string  `json:"source"`
	ReduceBW  float64 `json:"reduce_bw"`
	CopyBW    float64 `json:"copy_bw"`
	CodecBW   float64 `json:"codec_bw"`
	ArenaHier bool    `json:"arena_hier"`
	NUMALevel bool    `json:"numa_level"`
	Ring      []int   `json:"ring"`
}

// Info returns the communicator's description.
func (c *Communicator) Info() Info {
	algo := map[string]string{}
	for op, a := range c.cfg.Algo {
		algo[op] = string(a)
	}
	info := Info{
		Rank: c.rank, Size: c.size, Transports: c.transports, Addrs: c.addrs,
		TimeoutMs: c.cfg.Timeout.Milliseconds(), Algo: algo,
		StreamsPerPeer: c.cfg.StreamsPerPeer, ChunkBytes: c.cfg.ChunkBytes,
		Sequence: c.lane.seq.Load(), GoMaxProcs: runtime.GOMAXPROCS(0), FastLane: "off",
		Split: c.splitInfo(), NUMAGroups: c.Topology().NUMAGroups,
		SingleCopy: c.singleCopy[StreamDefault].State(), SingleCopyGather: c.singleCopyGather[StreamDefault].State(),
	}
	if t := c.topo; t != nil && t.model != nil {
		p := t.model.Params()
		info.Model = &ModelInfo{Source: t.source, ReduceBW: p.ReduceBandwidth, CopyBW: p.CopyBandwidth,
			CodecBW: p.CodecBandwidth, ArenaHier: t.model.ArenaHier(), NUMALevel: p.NUMALevel, Ring: t.ring}
	}
	if c.laneApplies() {
		info.FastLane = "go"
	}
	return info
}

// InfoJSON is Info as JSON.
func (c *Communicator) InfoJSON() string {
	b, err := json.Marshal(c.Info())
	if err != nil {
		return fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	return string(b)
}
