package pgbackend

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport"
)

// rankInfo is one rank's part of discovery's exchange.
type rankInfo struct {
	failed    bool // preparation failed on this rank
	wantProbe bool
	// noArena: this rank shares its host with other ranks of the
	// communicator but has no shared-memory arena with them (shared-memory
	// collectives off, or TCP forced), so the arena-based hierarchy is off.
	noArena  bool
	numa     int32
	reduceBW float64 // bytes/s of a local float32 sum; 0: not measured
	copyBW   float64 // bytes/s of a local copy; 0: not measured
	codecBW  float64 // bytes/s of float32 through the wire codec; 0: not measured
	fileSum  [16]byte
}

const rankInfoBytes = 48

func (a rankInfo) encode() []byte {
	b := make([]byte, rankInfoBytes)
	if a.failed {
		b[0] = 1
	}
	if a.wantProbe {
		b[1] = 1
	}
	if a.noArena {
		b[2] = 1
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(a.numa))
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(a.reduceBW))
	binary.LittleEndian.PutUint64(b[16:], math.Float64bits(a.copyBW))
	copy(b[24:], a.fileSum[:])
	binary.LittleEndian.PutUint64(b[40:], math.Float64bits(a.codecBW))
	return b
}

func decodeRankInfo(b []byte) rankInfo {
	a := rankInfo{
		failed:    b[0] != 0,
		wantProbe: b[1] != 0,
		noArena:   b[2] != 0,
		numa:      int32(binary.LittleEndian.Uint32(b[4:])),
		reduceBW:  math.Float64frombits(binary.LittleEndian.Uint64(b[8:])),
		copyBW:    math.Float64frombits(binary.LittleEndian.Uint64(b[16:])),
		codecBW:   math.Float64frombits(binary.LittleEndian.Uint64(b[40:])),
	}
	copy(a.fileSum[:], b[24:40])
	return a
}

// exchangeInfo all-gathers every rank's rankInfo.
func exchangeInfo(ctx context.Context, ep transport.Endpoint, mine rankInfo) ([]rankInfo, error) {
	n := ep.Size()
	buf := make([]byte, n*rankInfoBytes)
	if err := collectives.AllGather(ctx, ep, tagTopoInfo, mine.encode(), buf, collectives.Options{}); err != nil {
		return nil, err
	}
	all := make([]rankInfo, n)
	for i := range all {
		all[i] = decodeRankInfo(buf[i*rankInfoBytes:])
	}
	return all, nil
}

// graphSum fingerprints a graph, so ranks can check they loaded the same.
func graphSum(g *topo.Graph) ([16]byte, error) {
	var s [16]byte
	data, err := g.MarshalJSON()
	if err != nil {
		return s, err
	}
	full := sha256.Sum256(data)
	copy(s[:], full[:])
	return s, nil
}

// measureLocal times a float32 sum and a copy of 4 MiB (best of 3): the
// cost model's reduce and copy speeds. About 3 ms.
func measureLocal() (reduceBW, copyBW float64) {
	const n = 4 << 20
	a, b := make([]byte, n), make([]byte, n)
	best := func(fn func()) float64 {
		var d time.Duration
		for i := range 3 {
			start := time.Now()
			fn()
			if e := time.Since(start); i == 0 || e < d {
				d = e
			}
		}
		return float64(n) / max(d, time.Microsecond).Seconds()
	}
	reduceBW = best(func() { reduce.Reduce(reduce.Float32, reduce.Sum, a, b) })
	copyBW = best(func() { copy(a, b) })
	return reduceBW, copyBW
}

// probeDefaultBudget is HCCL_GO_TOPO_PROBE_MS's default: probing 8 ranks
// on 8 hosts (7 waves of 71 ms) stays well under a second on a loaded
// host, barriers included.
const probeDefaultBudget = 500 * time.Millisecond

// probeGraph measures every link (topo.Probe), all-gathers the rows and
// builds the graph: the same graph on every rank.
func probeGraph(ctx context.Context, ep transport.Endpoint, hosts []string, numa []int, cfg Config) (*topo.Graph, error) {
	budget := cfg.TopoProbeBudget
	if budget <= 0 {
		budget = probeDefaultBudget
	}
	// The budget is a target; this is the hard limit (a rank that dies
	// mid-probe leaves its partners waiting until then).
	pctx, cancel := context.WithTimeout(ctx, 4*budget+5*time.Second)
	defer cancel()
	n, rank := ep.Size(), ep.Rank()
	row, err := topo.Probe(pctx, rank, hosts, topo.NewEndpointLinks(ep, tagTopoPing), topo.ProbeConfig{Budget: budget})
	if err != nil {
		return nil, err
	}
	enc := topo.EncodeRow(row)
	rb := len(enc)
	buf := make([]byte, n*rb)
	if err := collectives.AllGather(pctx, ep, tagTopoRows, enc, buf, collectives.Options{}); err != nil {
		return nil, fmt.Errorf("exchanging probe rows: %w", err)
	}
	rows := make([][]topo.Link, n)
	ranks := make([]topo.RankInfo, n)
	for i := range rows {
		if rows[i], err = topo.DecodeRow(buf[i*rb:(i+1)*rb], n); err != nil {
			return nil, err
		}
		ranks[i] = topo.RankInfo{Host: hosts[i], NUMA: numa[i]}
	}
	return topo.GraphFromRows(rows, ranks)
}
