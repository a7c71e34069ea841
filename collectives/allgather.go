package collectives

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport"
)

// AllGather concatenates every rank's send, in rank order, into recv on
// every rank: len(recv) == size*len(send). In place: send may be exactly
// rank's own block of recv. Algorithm: Ring.
func AllGather(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("allgather", -1, err)
	}
	counts := make([]int, ep.Size())
	for i := range counts {
		counts[i] = len(send)
	}
	return wrapOp("allgather", ep.Rank(), allGatherV(ctx, ep, tag, send, recv, counts, o))
}

// AllGatherV is AllGather with a size per rank: counts[i] is the number of
// BYTES rank i contributes, len(send) == counts[rank], and rank i's block
// starts at sum(counts[:i]) in recv. Algorithm: Ring.
func AllGatherV(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, counts []int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("allgatherv", -1, err)
	}
	return wrapOp("allgatherv", ep.Rank(), allGatherV(ctx, ep, tag, send, recv, counts, o))
}

func allGatherV(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, counts []int, o Options) error {
	p, r := ep.Size(), ep.Rank()
	if err := checkOptions(o, Ring); err != nil {
		return err
	}
	if err := args.CheckCounts("counts", counts, p); err != nil {
		return err
	}
	if err := args.CheckLen("send", send, counts[r]); err != nil {
		return err
	}
	if err := args.CheckLen("recv", recv, sum(counts)); err != nil {
		return err
	}
	bl := countBlocks(counts, 1)
	if err := args.CheckAliasAt(send, recv, bl.of(recv, r)); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	args.CopyUnlessSame(bl.of(recv, r), send)
	return ringAllGather(ctx, ep, tag, send, recv, bl, o.chunkBytes(1))
}

// ringAllGather circulates the blocks of bl around the ring. Rank r sends
// to r+1 and receives from r-1:
//
//	step s = 0..p-2: send B[r-s] (its own block first, from send), receive
//	    B[r-s-1] straight into recv.
//
// Each rank sends n - |B[r+1]| bytes, (p-1)/p·n for equal blocks, and
// receives n - |B[r]|. Chunks are pipelined: the send of a chunk at step s
// waits only for the same chunk's receive at step s-1.
func ringAllGather(ctx context.Context, ep transport.Endpoint, tag transport.Tag, own, recv []byte, bl blocks, chunk int) error {
	p, r := ep.Size(), ep.Rank()
	pl := &pipeline{ep: ep, tag: tag, name: "ring", window: ringWindow}
	right, left := mod(r+1, p), mod(r-1, p)
	firstRecv := 0
	for s := range p - 1 {
		out := own
		if s > 0 {
			out = bl.of(recv, mod(r-s, p))
		}
		for k := range numChunks(len(out), chunk) {
			after := 0
			if s > 0 {
				after = firstRecv + k + 1
			}
			pl.addSend(right, s, chunkOf(out, k, chunk), after)
		}
		firstRecv = len(pl.recvs)
		in := bl.of(recv, mod(r-s-1, p))
		for k := range numChunks(len(in), chunk) {
			pl.addRecv(recvItem{peer: left, step: s, buf: chunkOf(in, k, chunk)})
		}
	}
	return pl.run(ctx)
}
