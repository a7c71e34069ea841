// Package pgbackend is the communicator: a rank's membership in a group of
// ranks, its links, its settings, and the dispatch of each operation to an
// algorithm on a stream. It is what the C ABI (export) drives, and what a
// pure-Go program uses directly.
package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Stream indices of a communicator's collective streams (streams.go).
const (
	StreamDefault      = 0
	StreamHighPriority = 1
	// numStreams is the most streams (HCCL_GO_STREAMS); it sizes the
	// per-stream arenas and progress records.
	numStreams = 4
)

// Communicator is one rank's handle on a group of ranks. Every method is
// safe for concurrent use; collectives must be issued in the same order on
// every rank (their sequence numbers name their messages).
type Communicator struct {
	rank, size int
	cfg        Config
	ep         transport.Endpoint
	// links is the endpoint without the traffic counters: what splits of
	// this communicator are views of (split.go).
	links      transport.Endpoint
	split      splitState
	transports []string // per peer: "self", "shm", "tcp", "inproc"
	addrs      []string // per rank: the address it published (nil when built by New)
	globalNote string   // suffix of op errors of a subgroup (globalranks.go)

	// ctx is cancelled by Abort, or when the communicator fails (its
	// cause says why, see failure.go): every running op sees it at once.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// lane holds the collective sequence number (identical across ranks)
	// and what the fast lane shares with C (lane.go).
	lane    *laneState
	issueMu sync.Mutex         // taking seq and queuing the op are one step
	sched   *streams.Scheduler // runs the collective streams (streams.go)
	streams []*streams.Stream
	// arenas, one per stream, are set when this rank shares its host with
	// other ranks of the communicator (HCCL_GO_SHM_COLLECTIVES): among
	// them. When every rank shares this host, collectives run in shared
	// memory (collectives/intra, arenaFor); otherwise the arenas carry the
	// intra-host phases of the hierarchical collectives (hiers).
	arenas [numStreams]*arena.Arena
	// shmJob names the arenas' segments (connect.go jobID); a split's
	// arenas are named after their root's (split_arena.go).
	shmJob string
	// hiers, one per stream, are set when the communicator spans several
	// hosts and every shared host has its arenas (topology.go): the
	// hierarchical algorithm then runs as collectives/hier.
	hiers [numStreams]*hier.Comm
	// numa is the NUMA level, when the topology has one (numa.go).
	numa  numaLevel
	p2p   *p2pQueues
	topo  *topology  // learned at init (topology.go); nil when built by New
	stats *commStats // bytes on the links per op kind (stats.go)

	// singleCopy, one per arena, is its single-copy state.
	singleCopy [numStreams]*intra.SingleCopy
	// singleCopyGather is the single-copy state of the data movers on the
	// same arena: all_gather and all_to_all of equal blocks
	// (HCCL_GO_SINGLE_COPY takes them apart from all_reduce).
	singleCopyGather [numStreams]*intra.SingleCopy

	// symm are the symmetric allocations whose all_reduces run in place
	// (symmetric.go); symmSrv serves one-sided operations of other hosts'
	// ranks (symm_remote.go), made on first use.
	symm     symmetricWindows
	symmOnce sync.Once
	symmSrv  *symmServe

	mu        sync.Mutex
	destroyed bool

	reliability // flight recorder, peer monitor, failure (failure.go)
}

// New builds a communicator over an established endpoint. transports names
// the link kind per peer for Info (nil: "unknown").
func New(ep transport.Endpoint, cfg Config, transports []string) *Communicator {
	counted, stats := countTraffic(ep)
	c := newCommunicator(context.Background(), ep, counted, stats, cfg, transports)
	c.split.family = newSplitFamily()
	return c
}

// newCommunicator builds a communicator over links whose context is a
// child of parent (a split's is its root's). Its collectives run over ep,
// links with their traffic counted in stats.
func newCommunicator(parent context.Context, links, ep transport.Endpoint, stats *commStats, cfg Config, transports []string) *Communicator {
	ctx, cancel := context.WithCancelCause(parent)
	c := &Communicator{
		rank: ep.Rank(), size: ep.Size(), cfg: cfg, ep: ep, links: links, stats: stats, transports: transports,
		globalNote: globalRanksNote(cfg.GlobalRanks),
		ctx:        ctx, cancel: cancel, reliability: newReliability(cfg), lane: &laneState{},
	}
	c.newStreams()
	c.p2p = newP2PQueues(c)
	return c
}

// Rank is this rank in [0, Size).
func (c *Communicator) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Communicator) Size() int { return c.size }

// Config returns the settings in force.
func (c *Communicator) Config() Config { return c.cfg }

// Abort fails every pending and later op at once and closes the links. The
// communicator must still be destroyed.
func (c *Communicator) Abort() {
	c.stopLane()
	c.stopSplitLanes()
	c.cancel(ErrAborted)
	_ = c.ep.Close()
	if c.mon != nil {
		_ = c.mon.ep.Close() // the TCP links, when data went through shared memory
	}
	c.waitLane() // ops in the fast lane may still touch the arenas
	_ = c.numa.closeArenas()
	for _, a := range c.arenas {
		if a != nil {
			_ = a.Close() // wakes waiters in shared memory too
		}
	}
}

// Destroy waits up to the timeout for queued work to finish, aborts what is
// left, and frees every link, goroutine and stream. Later calls return
// ErrDestroyed.
func (c *Communicator) Destroy() error {
	c.mu.Lock()
	if c.destroyed {
		c.mu.Unlock()
		return ErrDestroyed
	}
	c.destroyed = true
	c.mu.Unlock()
	c.orphanSplits() // before this communicator's own ops end: theirs end too
	c.stopLane()

	drained := make(chan struct{})
	go func() {
		c.sched.Close()
		c.p2p.close()
		close(drained)
	}()
	select {
	case <-drained:
		if c.mon != nil {
			c.mon.sayBye() // an orderly exit: peers stop watching this rank
		}
	case <-time.After(c.cfg.Timeout):
		c.cancel(ErrAborted) // fail what is still running, then wait for it to notice
		_ = c.ep.Close()
		<-drained
	}
	c.cancel(ErrAborted)
	c.waitLane() // ops in the fast lane may still touch the arenas
	if c.mon != nil {
		c.mon.stop()
	}
	err := c.ep.Close()
	if c.mon != nil {
		err = errors.Join(err, c.mon.close())
	}
	err = errors.Join(err, c.numa.closeArenas())
	for _, a := range c.arenas {
		if a != nil {
			err = errors.Join(err, a.Close())
		}
	}
	c.leaveFamily()
	if err != nil {
		return fmt.Errorf("destroy rank %d: %w", c.rank, err)
	}
	return nil
}

// live returns ErrDestroyed once Destroy has begun.
func (c *Communicator) live() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed {
		return fmt.Errorf("rank %d: %w", c.rank, ErrDestroyed)
	}
	return nil
}

// submitCollective gives the op the next sequence number (its message tag),
// records it in the flight recorder and queues it on the stream; with
// HCCL_GO_CHECK the ranks compare fingerprints of it first (check.go).
func (c *Communicator) submitCollective(stream int, op opDesc, body func(ctx context.Context, tag transport.Tag) error) (*streams.Work, error) {
	if err := c.live(); err != nil {
		return nil, err
	}
	r, err := c.reserve(stream) // back-pressure, before the op takes a sequence number
	if err != nil {
		return nil, err
	}
	// Taking the sequence number and queuing the op happen together: two
	// threads issuing at once (e.g. Future callbacks, as PowerSGD does)
	// must not queue in the opposite order of their numbers, or ranks would
	// run different ops against each other. The fast lane takes its number
	// under the same lock (lane.go; from C, the spin lock alone).
	c.issueMu.Lock()
	defer c.issueMu.Unlock()
	c.lane.issue.Lock()
	defer c.lane.issue.Unlock()
	op.Seq, op.Stream, op.Route = c.lane.seq.Add(1), stream, "messages"
	switch {
	case c.arenaFor(stream, collectives.Options{Algo: op.Algo}) != nil:
		op.Route = "arena"
	case op.Algo == algoSymm:
		op.Route = "symmetric"
	case op.Algo == collectives.Hier && c.hiers[stream] != nil && c.topo.hosts != nil:
		op.Route = "hier+arena" // intra-host phases in the arena
	case op.Algo == collectives.Hier && c.hiers[stream] != nil:
		op.Route = "hier" // phases inside each group as messages
	case op.Algo == algoNUMA && c.numa.on(stream):
		op.Route = "numa+arena" // phases inside each NUMA group in its arena
	}
	o, issued := c.newCommOp(op, body)
	return r.SubmitOp(o, issued), nil
}

// SequenceNumber is the number of collectives issued so far.
func (c *Communicator) SequenceNumber() uint64 { return c.lane.seq.Load() }
