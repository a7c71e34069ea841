package pgbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/transport"
)

// Traffic counters: the payload bytes and messages each communicator puts
// on its links and takes off them, per kind of op, so that compression
// ratios are measured rather than computed. They are counted at the
// transport boundary (a counting Endpoint around the communicator's
// links); the op's counters travel in its context (opContext). Messages to this rank
// itself are not counted, nor is the traffic of the shared-memory arena
// (single-host collectives, and the intra-host phases of hierarchical ones
// across hosts, work in shared memory without messages).

// OpTraffic is what one kind of op has moved so far.
type OpTraffic struct {
	Calls     int64 `json:"calls"`
	BytesSent int64 `json:"bytes_sent"`
	BytesRecv int64 `json:"bytes_recv"`
	MsgsSent  int64 `json:"msgs_sent"`
	MsgsRecv  int64 `json:"msgs_recv"`
	// ArenaNs and InterNs are the time this kind's hierarchical runs
	// across hosts (collectives/hier: all_reduce, all_gather,
	// reduce_scatter) spent in their phases inside each host (the arena,
	// or messages among a group without one) and in their inter-host
	// exchange; a large all_reduce overlaps the two.
	ArenaNs int64 `json:"arena_ns,omitempty"`
	InterNs int64 `json:"inter_ns,omitempty"`
	// ArenaWaitNs is the part of ArenaNs spent waiting for the host's
	// other ranks; the rest is this rank's own copies and reductions.
	ArenaWaitNs int64 `json:"arena_wait_ns,omitempty"`
}

// Stats are a communicator's counters since it was created.
type Stats struct {
	Rank        int                  `json:"rank"`
	Size        int                  `json:"size"`
	Compression string               `json:"compression"`
	BytesSent   int64                `json:"bytes_sent"` // over all ops
	BytesRecv   int64                `json:"bytes_recv"`
	Ops         map[string]OpTraffic `json:"ops"` // by kind: "allreduce", "sparse_allreduce", "p2p", ...
	// PlacementMoves is how often this rank moved its thread off a CPU
	// where a peer of its host was waiting (transport/arena/placement.go).
	PlacementMoves int64 `json:"placement_moves"`
}

// trafficCounters are one kind's live counters.
type trafficCounters struct {
	calls, bytesSent, bytesRecv, msgsSent, msgsRecv atomic.Int64
	arenaNs, interNs, arenaWaitNs                   atomic.Int64
}

// commStats holds the counters of one communicator.
type commStats struct {
	mu     sync.RWMutex
	byKind map[string]*trafficCounters
}

func newCommStats() *commStats { return &commStats{byKind: map[string]*trafficCounters{}} }

func (s *commStats) kind(k string) *trafficCounters {
	s.mu.RLock()
	tc, ok := s.byKind[k]
	s.mu.RUnlock()
	if ok {
		return tc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tc, ok = s.byKind[k]; !ok {
		tc = &trafficCounters{}
		s.byKind[k] = tc
	}
	return tc
}

// trafficKey is the context key of the counters that an op's messages
// are charged to (opContext carries them).
type trafficKey struct{}

// call counts one call of kind and returns its counters, for the op's
// context to carry (opContext), so that the counting endpoint charges the
// op's messages to it.
func (s *commStats) call(kind string) *trafficCounters {
	tc := s.kind(kind)
	tc.calls.Add(1)
	return tc
}

// countersOf returns the counters a message belongs to: its op's, else
// those of its tag's kind.
func (s *commStats) countersOf(ctx context.Context, tag transport.Tag) *trafficCounters {
	if tc, ok := ctx.Value(trafficKey{}).(*trafficCounters); ok && tc != nil {
		return tc
	}
	if tag&transport.P2PTagBit != 0 {
		return s.kind("p2p")
	}
	return s.kind("other")
}

// addTimes charges the phase times of a hierarchical op to the op's
// counters (those its context carries).
func (s *commStats) addTimes(ctx context.Context, t hier.Times) {
	if tc, ok := ctx.Value(trafficKey{}).(*trafficCounters); ok && tc != nil {
		tc.arenaNs.Add(int64(t.Arena))
		tc.arenaWaitNs.Add(int64(t.ArenaWait))
		tc.interNs.Add(int64(t.Inter))
	}
}

func (s *commStats) snapshot() (total OpTraffic, ops map[string]OpTraffic) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ops = make(map[string]OpTraffic, len(s.byKind))
	for k, tc := range s.byKind {
		t := OpTraffic{
			Calls: tc.calls.Load(), BytesSent: tc.bytesSent.Load(), BytesRecv: tc.bytesRecv.Load(),
			MsgsSent: tc.msgsSent.Load(), MsgsRecv: tc.msgsRecv.Load(),
			ArenaNs: tc.arenaNs.Load(), InterNs: tc.interNs.Load(), ArenaWaitNs: tc.arenaWaitNs.Load(),
		}
		ops[k] = t
		total.BytesSent += t.BytesSent
		total.BytesRecv += t.BytesRecv
	}
	return total, ops
}

// countingEndpoint counts the payload of every message between distinct
// ranks that completes without error.
type countingEndpoint struct {
	transport.Endpoint
	stats *commStats
}

// countTraffic wraps ep so that its messages are counted in a new
// commStats.
func countTraffic(ep transport.Endpoint) (transport.Endpoint, *commStats) {
	s := newCommStats()
	return &countingEndpoint{Endpoint: ep, stats: s}, s
}

func (e *countingEndpoint) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	err := e.Endpoint.Send(ctx, peer, tag, data)
	if err == nil && peer != e.Rank() {
		tc := e.stats.countersOf(ctx, tag)
		tc.bytesSent.Add(int64(len(data)))
		tc.msgsSent.Add(1)
	}
	return err
}

func (e *countingEndpoint) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	err := e.Endpoint.Recv(ctx, peer, tag, buf)
	if err == nil && peer != e.Rank() {
		tc := e.stats.countersOf(ctx, tag)
		tc.bytesRecv.Add(int64(len(buf)))
		tc.msgsRecv.Add(1)
	}
	return err
}

// TryRecvAny implements transport.AnySource when the wrapped endpoint
// does.
func (e *countingEndpoint) TryRecvAny(ctx context.Context, tag transport.Tag, buf []byte, accept func(peer int) bool) (int, bool, error) {
	a, ok := e.Endpoint.(transport.AnySource)
	if !ok {
		return -1, false, fmt.Errorf("%w (%T)", transport.ErrNoAnySource, e.Endpoint)
	}
	peer, ok, err := a.TryRecvAny(ctx, tag, buf, accept)
	if ok && err == nil && peer != e.Rank() {
		tc := e.stats.countersOf(ctx, tag)
		tc.bytesRecv.Add(int64(len(buf)))
		tc.msgsRecv.Add(1)
	}
	return peer, ok, err
}

// Stats returns the communicator's traffic counters.
func (c *Communicator) Stats() Stats {
	total, ops := c.stats.snapshot()
	var moves int64
	for _, a := range append(c.arenas[:len(c.arenas):len(c.arenas)], c.numa.arenas[:]...) {
		if a != nil {
			moves += a.Moves()
		}
	}
	return Stats{
		Rank: c.rank, Size: c.size, Compression: string(c.compression()),
		BytesSent: total.BytesSent, BytesRecv: total.BytesRecv, Ops: ops, PlacementMoves: moves,
	}
}

// StatsJSON is Stats as JSON, with the op kinds in sorted order.
func (c *Communicator) StatsJSON() string {
	b, err := json.Marshal(c.Stats())
	if err != nil {
		return fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	return string(b)
}
