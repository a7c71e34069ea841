package pgbackend

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// The collectives below validate their arguments before queuing (an error
// then means the op never ran on this rank), then run on the given stream.
// Buffer lengths are in bytes; buffers must stay valid until the returned
// Work completes. send and recv may be the same memory (in place).

// AllReduce reduces send across ranks into recv on every rank.
func (c *Communicator) AllReduce(send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stream int) (*streams.Work, error) {
	return c.Submit(c.AllReduceCall(send, recv, dt, op, preMul, stream))
}

// AllReduceCall checks an all_reduce and makes its Call (see Submit and
// RunNow; export's C lane runs blocking all_reduces itself, lane.go).
func (c *Communicator) AllReduceCall(send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stream int) (Call, error) {
	if err := c.checkReduction("allreduce", dt, op, send, recv, len(send)); err != nil {
		return Call{}, err
	}
	if partialOverlap(send, recv) {
		return Call{}, c.invalid("allreduce", "send and recv buffers partially overlap (they must be identical or disjoint)")
	}
	if body := c.symmetricAllReduce(stream, send, recv, dt, op); body != nil {
		return Call{stream, reduction("allreduce", len(send), dt, op, -1).algo(collectives.Options{Algo: algoSymm}), body}, nil
	}
	o, comp := c.pickAllReduce(stream, len(send), dt, op, c.options("allreduce", preMul))
	return Call{stream, reduction("allreduce", len(send), dt, op, -1).algo(o).compressed(comp), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.AllReduceWith(ctx, a, c.singleCopy[stream], uint64(tag), send, recv, dt, op, preMul)
		}
		return c.allReduce(ctx, stream, tag, send, recv, dt, op, comp, o)
	}}, nil
}

// Broadcast copies root's send into recv on every rank.
func (c *Communicator) Broadcast(send, recv []byte, root, stream int) (*streams.Work, error) {
	return c.Submit(c.BroadcastCall(send, recv, root, stream))
}

// BroadcastCall checks a broadcast and makes its Call (see Submit and RunNow).
func (c *Communicator) BroadcastCall(send, recv []byte, root, stream int) (Call, error) {
	if err := c.checkRoot("broadcast", root); err != nil {
		return Call{}, err
	}
	if c.rank == root && len(send) != len(recv) {
		return Call{}, c.invalid("broadcast", "send has %d bytes, recv %d", len(send), len(recv))
	}
	if body := c.symmetricBroadcast(stream, send, recv, root); body != nil {
		return Call{stream, movement("broadcast", len(recv), root).algo(collectives.Options{Algo: algoSymm}), body}, nil
	}
	o := c.pick(stream, topo.OpBroadcast, len(recv), c.options("broadcast", 0), broadcastAlgos)
	return Call{stream, movement("broadcast", len(recv), root).algo(o), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.Broadcast(ctx, a, uint64(tag), send, recv, root)
		}
		return c.broadcast(ctx, stream, tag, send, recv, root, o)
	}}, nil
}

// Reduce reduces send across ranks into recv on root (recv unused elsewhere).
func (c *Communicator) Reduce(send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root, stream int) (*streams.Work, error) {
	return c.Submit(c.ReduceCall(send, recv, dt, op, preMul, root, stream))
}

// ReduceCall checks a reduce and makes its Call (see Submit and RunNow).
func (c *Communicator) ReduceCall(send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root, stream int) (Call, error) {
	if err := c.checkRoot("reduce", root); err != nil {
		return Call{}, err
	}
	want := len(send)
	if c.rank != root {
		recv = nil
	} else if err := c.checkReduction("reduce", dt, op, send, recv, want); err != nil {
		return Call{}, err
	}
	if err := c.checkReduction("reduce", dt, op, send, send, want); err != nil {
		return Call{}, err
	}
	o := c.pickReduce(stream, len(send), c.options("reduce", preMul))
	return Call{stream, reduction("reduce", len(send), dt, op, root).algo(o), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.Reduce(ctx, a, uint64(tag), send, recv, dt, op, preMul, root)
		}
		switch o.Algo {
		case algoNUMA:
			return c.numa.hiers[stream].Reduce(ctx, tag, send, recv, dt, op, preMul, root, o)
		case collectives.Hier:
			return c.hiers[stream].Reduce(ctx, tag, send, recv, dt, op, preMul, root, o)
		}
		return collectives.Reduce(ctx, c.ep, tag, send, recv, dt, op, root, o)
	}}, nil
}

// AllGather concatenates every rank's send, in rank order, into recv.
func (c *Communicator) AllGather(send, recv []byte, stream int) (*streams.Work, error) {
	return c.Submit(c.AllGatherCall(send, recv, stream))
}

// AllGatherCall checks a all_gather and makes its Call (see Submit and RunNow).
func (c *Communicator) AllGatherCall(send, recv []byte, stream int) (Call, error) {
	if len(recv) != c.size*len(send) {
		return Call{}, c.invalid("allgather", "recv has %d bytes, want %d ranks x %d", len(recv), c.size, len(send))
	}
	if body := c.symmetricAllGather(stream, send, recv); body != nil {
		return Call{stream, movement("allgather", len(recv), -1).algo(collectives.Options{Algo: algoSymm}), body}, nil
	}
	o := c.pick(stream, topo.OpAllGather, len(recv), c.options("allgather", 0), movementAlgos)
	return Call{stream, movement("allgather", len(recv), -1).algo(o), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.AllGatherWith(ctx, a, c.singleCopyGather[stream], uint64(tag), send, recv)
		}
		return c.allGather(ctx, stream, tag, send, recv, o)
	}}, nil
}

// AllGatherV is AllGather with counts[i] bytes from rank i.
func (c *Communicator) AllGatherV(send, recv []byte, counts []int, stream int) (*streams.Work, error) {
	total, err := c.checkCounts("allgatherv", counts)
	if err != nil {
		return nil, err
	}
	if len(send) != counts[c.rank] || len(recv) != total {
		return nil, c.invalid("allgatherv", "send has %d bytes (want %d), recv %d (want %d)", len(send), counts[c.rank], len(recv), total)
	}
	counts = append([]int(nil), counts...) // the caller's slice may be C memory freed after return
	o := c.options("allgather", 0)
	return c.submitCollective(stream, movement("allgatherv", total, -1).withCounts(counts).algo(o), func(ctx context.Context, tag transport.Tag) error {
		return collectives.AllGatherV(ctx, c.ep, tag, send, recv, counts, o)
	})
}

// ReduceScatter reduces send (size blocks of len(recv)) and leaves block
// rank in recv.
func (c *Communicator) ReduceScatter(send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stream int) (*streams.Work, error) {
	return c.Submit(c.ReduceScatterCall(send, recv, dt, op, preMul, stream))
}

// ReduceScatterCall checks a reduce_scatter and makes its Call (see Submit and RunNow).
func (c *Communicator) ReduceScatterCall(send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stream int) (Call, error) {
	if err := c.checkReduction("reducescatter", dt, op, recv, recv, len(recv)); err != nil {
		return Call{}, err
	}
	if len(send) != c.size*len(recv) {
		return Call{}, c.invalid("reducescatter", "send has %d bytes, want %d ranks x %d", len(send), c.size, len(recv))
	}
	if body := c.symmetricReduceScatter(stream, send, recv, dt, op); body != nil {
		return Call{stream, reduction("reducescatter", len(send), dt, op, -1).algo(collectives.Options{Algo: algoSymm}), body}, nil
	}
	o := c.pick(stream, topo.OpReduceScatter, len(send), c.options("reducescatter", preMul), movementAlgos)
	return Call{stream, reduction("reducescatter", len(send), dt, op, -1).algo(o), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.ReduceScatter(ctx, a, uint64(tag), send, recv, dt, op, preMul)
		}
		return c.reduceScatter(ctx, stream, tag, send, recv, dt, op, o)
	}}, nil
}

// ReduceScatterV is ReduceScatter with counts[i] ELEMENTS for rank i.
func (c *Communicator) ReduceScatterV(send, recv []byte, counts []int, dt reduce.DType, op reduce.Op, preMul float64, stream int) (*streams.Work, error) {
	if err := c.checkReduction("reducescatterv", dt, op, recv, recv, len(recv)); err != nil {
		return nil, err
	}
	total, err := c.checkCounts("reducescatterv", counts)
	if err != nil {
		return nil, err
	}
	if len(send) != total*dt.Size() || len(recv) != counts[c.rank]*dt.Size() {
		return nil, c.invalid("reducescatterv", "send has %d bytes (want %d), recv %d (want %d)",
			len(send), total*dt.Size(), len(recv), counts[c.rank]*dt.Size())
	}
	counts = append([]int(nil), counts...)
	o := c.options("reducescatter", preMul)
	return c.submitCollective(stream, reduction("reducescatterv", len(send), dt, op, -1).withCounts(counts).algo(o), func(ctx context.Context, tag transport.Tag) error {
		return collectives.ReduceScatterV(ctx, c.ep, tag, send, recv, counts, dt, op, o)
	})
}

// AllToAllCall checks an all_to_all of equal blocks (block i of send,
// len(send)/size bytes, to rank i; every rank passes the same length) and
// makes its Call. On one host it may read the peers' blocks in place
// (intra.AllToAllWith, sharing all_gather's single-copy agreement).
func (c *Communicator) AllToAllCall(send, recv []byte, stream int) (Call, error) {
	if len(send) != len(recv) || len(send)%c.size != 0 {
		return Call{}, c.invalid("alltoall", "send has %d bytes and recv %d: want equal lengths, a multiple of %d ranks", len(send), len(recv), c.size)
	}
	o := c.options("alltoall", 0)
	return Call{stream, movement("alltoall", len(send), -1).algo(o), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.AllToAllWith(ctx, a, c.singleCopyGather[stream], uint64(tag), send, recv)
		}
		counts, displs := evenBlocks(c.size, len(send)/c.size)
		return collectives.AllToAllV(ctx, c.ep, tag, send, counts, displs, recv, counts, displs, o)
	}}, nil
}

// evenBlocks are the counts and displacements of p blocks of m bytes.
func evenBlocks(p, m int) (counts, displs []int) {
	counts, displs = make([]int, p), make([]int, p)
	for i := range p {
		counts[i], displs[i] = m, i*m
	}
	return counts, displs
}

// AllToAllV sends send[sendDispls[i]:+sendCounts[i]] to rank i and receives
// rank i's block into recv[recvDispls[i]:+recvCounts[i]] (all in bytes).
func (c *Communicator) AllToAllV(send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, stream int) (*streams.Work, error) {
	return c.Submit(c.AllToAllVCall(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, stream))
}

// AllToAllVCall checks a all_to_all and makes its Call (see Submit and RunNow).
func (c *Communicator) AllToAllVCall(send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, stream int) (Call, error) {
	if err := c.checkBlocks("alltoallv", "send", len(send), sendCounts, sendDispls); err != nil {
		return Call{}, err
	}
	if err := c.checkBlocks("alltoallv", "recv", len(recv), recvCounts, recvDispls); err != nil {
		return Call{}, err
	}
	clone := func(s []int) []int { return append([]int(nil), s...) }
	sc, sd, rc, rd := clone(sendCounts), clone(sendDispls), clone(recvCounts), clone(recvDispls)
	o := c.options("alltoall", 0)
	return Call{stream, movement("alltoallv", len(send), -1).algo(o), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.AllToAllV(ctx, a, uint64(tag), send, sc, sd, recv, rc, rd)
		}
		return collectives.AllToAllV(ctx, c.ep, tag, send, sc, sd, recv, rc, rd, o)
	}}, nil
}

// Gather concatenates every rank's send into recv on root.
func (c *Communicator) Gather(send, recv []byte, root, stream int) (*streams.Work, error) {
	if err := c.checkRoot("gather", root); err != nil {
		return nil, err
	}
	if c.rank == root && len(recv) != c.size*len(send) {
		return nil, c.invalid("gather", "recv has %d bytes, want %d ranks x %d", len(recv), c.size, len(send))
	}
	o := c.options("gather", 0)
	return c.submitCollective(stream, movement("gather", len(send), root).algo(o), func(ctx context.Context, tag transport.Tag) error {
		return collectives.Gather(ctx, c.ep, tag, send, recv, root, o)
	})
}

// Scatter sends block i of root's send to rank i's recv.
func (c *Communicator) Scatter(send, recv []byte, root, stream int) (*streams.Work, error) {
	if err := c.checkRoot("scatter", root); err != nil {
		return nil, err
	}
	if c.rank == root && len(send) != c.size*len(recv) {
		return nil, c.invalid("scatter", "send has %d bytes, want %d ranks x %d", len(send), c.size, len(recv))
	}
	o := c.options("scatter", 0)
	return c.submitCollective(stream, movement("scatter", len(recv), root).algo(o), func(ctx context.Context, tag transport.Tag) error {
		return collectives.Scatter(ctx, c.ep, tag, send, recv, root, o)
	})
}

// Barrier completes on each rank once every rank has entered it.
func (c *Communicator) Barrier(stream int) (*streams.Work, error) {
	return c.Submit(c.BarrierCall(stream))
}

// BarrierCall checks a barrier and makes its Call (see Submit and RunNow).
func (c *Communicator) BarrierCall(stream int) (Call, error) {
	o := c.options("barrier", 0)
	return Call{stream, movement("barrier", 0, -1).algo(o), func(ctx context.Context, tag transport.Tag) error {
		if a := c.arenaFor(stream, o); a != nil {
			return intra.Barrier(ctx, a, uint64(tag))
		}
		return collectives.Barrier(ctx, c.ep, tag)
	}}, nil
}

// arenaFor returns the stream's shared-memory arena when the op should run
// there whole: the communicator lives on one host and no message algorithm
// was forced for the op (HCCL_GO_ALGO=shm also selects the arena
// explicitly).
// singleCopies are an arena's single-copy states for all_reduce and for
// all_gather under HCCL_GO_SINGLE_COPY mode (Config.SingleCopy). Each
// kind of op has its own, so that its ranks agree on it at its first op in
// its range whatever the mode says elsewhere: ranks of different modes
// agree against it.
func singleCopies(mode string) (reduce, gather *intra.SingleCopy) {
	return intra.NewSingleCopy(mode == "1"), intra.NewSingleCopy(mode == "1" || mode == "auto")
}

func (c *Communicator) arenaFor(stream int, o collectives.Options) *arena.Arena {
	if o.Algo != collectives.Auto && o.Algo != "shm" {
		return nil
	}
	if a := c.arenas[stream]; a != nil && a.Size() == c.size {
		return a
	}
	return nil
}

func (c *Communicator) options(op string, preMul float64) collectives.Options {
	return collectives.Options{Algo: c.cfg.AlgoFor(op), PreMul: preMul, ChunkBytes: c.cfg.ChunkBytes}
}

func (c *Communicator) invalid(op, format string, args ...any) error {
	return fmt.Errorf("%s rank %d: %w: %s", op, c.rank, ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func (c *Communicator) checkRoot(op string, root int) error {
	if root < 0 || root >= c.size {
		return c.invalid(op, "root %d out of range [0, %d)", root, c.size)
	}
	return nil
}

// checkReduction validates a reduction's dtype/op and that send and recv
// both hold want bytes, a whole number of elements.
func (c *Communicator) checkReduction(op string, dt reduce.DType, rop reduce.Op, send, recv []byte, want int) error {
	if err := reduce.Check(dt, rop); err != nil {
		return c.invalid(op, "%v", err)
	}
	if len(send) != want || len(recv) != want {
		return c.invalid(op, "send has %d bytes, recv %d, want %d", len(send), len(recv), want)
	}
	if want%dt.Size() != 0 {
		return c.invalid(op, "%d bytes is not a whole number of %s elements", want, dt)
	}
	return nil
}

// partialOverlap reports whether a and b share memory without being the
// same bytes (in place).
func partialOverlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	alo, blo := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	overlap := alo < blo+uintptr(len(b)) && blo < alo+uintptr(len(a))
	return overlap && !(alo == blo && len(a) == len(b))
}

// checkCounts validates one count per rank and returns their sum.
func (c *Communicator) checkCounts(op string, counts []int) (int, error) {
	if len(counts) != c.size {
		return 0, c.invalid(op, "%d counts for %d ranks", len(counts), c.size)
	}
	total := 0
	for i, n := range counts {
		if n < 0 {
			return 0, c.invalid(op, "count[%d] = %d is negative", i, n)
		}
		total += n
	}
	return total, nil
}

// checkBlocks validates per-rank (count, displacement) pairs against a
// buffer of n bytes.
func (c *Communicator) checkBlocks(op, name string, n int, counts, displs []int) error {
	if len(counts) != c.size || len(displs) != c.size {
		return c.invalid(op, "%s: %d counts and %d displacements for %d ranks", name, len(counts), len(displs), c.size)
	}
	for i := range counts {
		if counts[i] < 0 || displs[i] < 0 || displs[i]+counts[i] > n {
			return c.invalid(op, "%s block %d [%d, %d) outside the %d-byte buffer", name, i, displs[i], displs[i]+counts[i], n)
		}
	}
	return nil
}
