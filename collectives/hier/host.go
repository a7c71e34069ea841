package hier

import (
	"context"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// Host runs the collectives among the ranks of one host of the Layout,
// the hop inside a host of every hierarchical collective: the host's
// shared-memory arena (ArenaHost), or messages over a view of the
// communicator's endpoint (MessageHost) where the ranks of a group share
// no arena (a cluster of ranks on fast links, or arenas turned off). The
// hierarchical collectives call its operations one at a time, in the same
// order on every rank of the host, with the op's tag. Roots are local
// indices (positions in Ranks); counts are as in intra's ReduceScatterV
// (elements) and AllGatherV (bytes).
type Host interface {
	// Ranks are the host's global ranks in increasing order.
	Ranks() []int
	ReduceScatterV(ctx context.Context, tag transport.Tag, send, recv []byte, counts []int, dt reduce.DType, op reduce.Op, preMul float64) error
	AllGatherV(ctx context.Context, tag transport.Tag, send, recv []byte, counts []int) error
	Broadcast(ctx context.Context, tag transport.Tag, send, recv []byte, root int) error
	Reduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int) error
	// Fail tells the host's peers that this rank's op failed with err
	// outside the host's operations, where they may be waiting for it.
	Fail(err error)
	// BeginAway tells them that this rank works across hosts until the
	// matching EndAway, so that a peer whose wait for it times out first
	// waits briefly for its failure (arena.Arena.BeginAway).
	BeginAway()
	EndAway()
	// Waited is the time this rank has spent waiting for its host's
	// peers, where the host measures it (0 otherwise).
	Waited() time.Duration
}

// ArenaHost is the Host of the ranks that share a, nil when a is nil (a
// rank alone on its host).
func ArenaHost(a *arena.Arena) Host {
	if a == nil {
		return nil
	}
	return arenaHost{a}
}

type arenaHost struct{ a *arena.Arena }

func (h arenaHost) Ranks() []int          { return h.a.Ranks() }
func (h arenaHost) Fail(err error)        { h.a.Fail(err) }
func (h arenaHost) BeginAway()            { h.a.BeginAway() }
func (h arenaHost) EndAway()              { h.a.EndAway() }
func (h arenaHost) Waited() time.Duration { return h.a.Waited() }

func (h arenaHost) ReduceScatterV(ctx context.Context, tag transport.Tag, send, recv []byte, counts []int, dt reduce.DType, op reduce.Op, preMul float64) error {
	return intra.ReduceScatterV(ctx, h.a, uint64(tag), send, recv, counts, dt, op, preMul)
}

func (h arenaHost) AllGatherV(ctx context.Context, tag transport.Tag, send, recv []byte, counts []int) error {
	return intra.AllGatherV(ctx, h.a, uint64(tag), send, recv, counts)
}

func (h arenaHost) Broadcast(ctx context.Context, tag transport.Tag, send, recv []byte, root int) error {
	return intra.Broadcast(ctx, h.a, uint64(tag), send, recv, root)
}

func (h arenaHost) Reduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int) error {
	return intra.Reduce(ctx, h.a, uint64(tag), send, recv, dt, op, preMul, root)
}

// spaceHost is the tag space of a MessageHost's view. Its operations run
// one at a time under the op's tag, so consecutive ones between two ranks
// arrive in order and never take each other's messages.
const spaceHost = 1

// MessageHost is the Host of ranks (global ranks of ep, increasing, this
// rank's included) that run their collectives as messages over ep: the
// collectives package's ring and tree algorithms over a view of them.
func MessageHost(ep transport.Endpoint, ranks []int) (Host, error) {
	v, err := sub.New(ep, ranks, spaceHost)
	if err != nil {
		return nil, err
	}
	return messageHost{v: v, ranks: ranks}, nil
}

type messageHost struct {
	v     transport.Endpoint
	ranks []int
}

func (h messageHost) Ranks() []int { return h.ranks }

// Fail does nothing: a peer waiting for a message from this rank learns of
// its failure through the communicator (pgbackend's failure notices) or
// its own timeout.
func (h messageHost) Fail(error) {}

func (h messageHost) Waited() time.Duration { return 0 }

// BeginAway and EndAway do nothing, as Fail.
func (h messageHost) BeginAway() {}
func (h messageHost) EndAway()   {}

func (h messageHost) ReduceScatterV(ctx context.Context, tag transport.Tag, send, recv []byte, counts []int, dt reduce.DType, op reduce.Op, preMul float64) error {
	return collectives.ReduceScatterV(ctx, h.v, tag, send, recv, counts, dt, op, collectives.Options{PreMul: preMul})
}

func (h messageHost) AllGatherV(ctx context.Context, tag transport.Tag, send, recv []byte, counts []int) error {
	return collectives.AllGatherV(ctx, h.v, tag, send, recv, counts, collectives.Options{})
}

func (h messageHost) Broadcast(ctx context.Context, tag transport.Tag, send, recv []byte, root int) error {
	return collectives.Broadcast(ctx, h.v, tag, send, recv, root, collectives.Options{})
}

func (h messageHost) Reduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int) error {
	return collectives.Reduce(ctx, h.v, tag, send, recv, dt, op, root, collectives.Options{PreMul: preMul})
}
