package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// AllGather concatenates every rank's send, in rank order, into recv on
// every rank: len(recv) == p*len(send). In place: send may be exactly the
// caller's own block of recv.
//
// Each rank publishes its block (inline slot when small, else copyBytes
// per epoch through its data half), copies its own block into place while
// the others publish, then copies every peer's chunk. Per payload byte of
// recv (n = p·len(send)): publish 1/p read + 1/p written, own block 1/p +
// 1/p (none in place), peers' blocks (p-1)/p + (p-1)/p: 2 + 2/p in all
// (3 for p = 2).
func AllGather(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte) error {
	if err := checkAllGather(a, send, recv); err != nil {
		return wrapOp("allgather", a, seq, err)
	}
	return wrapOp("allgather", a, seq, allGather(ctx, a, seq, send, recv, defaultTuning()))
}

func checkAllGather(a *arena.Arena, send, recv []byte) error {
	if err := checkArena(a); err != nil {
		return err
	}
	m := len(send)
	if err := args.CheckLen("recv", recv, a.Size()*m); err != nil {
		return err
	}
	me := a.Index()
	return args.CheckAliasAt(send, recv, recv[me*m:(me+1)*m])
}

func allGather(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, t tuning) error {
	stamp := opStamp{kind: kindAllGather, seq: seq, bytes: len(send), root: noRoot}
	return gatherBlocks(ctx, a, seq, stamp, send, recv, evenBlocks(a.Size(), len(send)), t)
}

// AllGatherV is AllGather with counts[i] bytes from rank i, laid out one
// after the other in recv in rank order: len(recv) == sum(counts),
// len(send) == counts[rank]. Every rank passes the same counts. In place:
// send may be exactly the caller's own block of recv. Same protocol and
// cost as AllGather; a rank whose block is shorter than the longest
// publishes nothing in the epochs past its end.
func AllGatherV(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, counts []int) error {
	b, err := checkAllGatherV(a, send, recv, counts)
	if err != nil {
		return wrapOp("allgatherv", a, seq, err)
	}
	stamp := opStamp{kind: kindAllGatherV, seq: seq, bytes: len(recv), root: noRoot}
	return wrapOp("allgatherv", a, seq, gatherBlocks(ctx, a, seq, stamp, send, recv, b, defaultTuning()))
}

func checkAllGatherV(a *arena.Arena, send, recv []byte, counts []int) (blocks, error) {
	if err := checkArena(a); err != nil {
		return blocks{}, err
	}
	b, err := countBlocks(counts, a.Size(), 1)
	if err != nil {
		return blocks{}, err
	}
	me := a.Index()
	if err := args.CheckLen("recv", recv, b.total()); err != nil {
		return blocks{}, err
	}
	if err := args.CheckLen("send", send, b.size[me]); err != nil {
		return blocks{}, err
	}
	return b, args.CheckAliasAt(send, recv, b.of(recv, me))
}

// gatherBlocks runs an all-gather into recv's blocks b as one arena
// operation stamped with stamp.
func gatherBlocks(ctx context.Context, a *arena.Arena, seq uint64, stamp opStamp, send, recv []byte, b blocks, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	me, p := a.Index(), a.Size()
	var err error
	s := stamp.encode()
	switch {
	case p == 1:
		args.CopyUnlessSame(recv, send)
	case b.longest() <= a.InlineBytes(): // empty calls too: they must meet their peers
		e := a.Next()
		copy(a.Inline(me, e)[:len(send)], send)
		postFirst(a, e, s)
		args.CopyUnlessSame(b.of(recv, me), send)
		err = finishGatherInline(ctx, a, e, s, recv, b)
	default:
		err = allGatherHalves(ctx, a, s, send, recv, b, t.copyBytes)
	}
	endOp(a, err)
	return err
}

// finishGatherInline is the inline case of gatherBlocks after its post:
// wait for epoch e, check the stamps, copy every peer's block out of its
// inline slot.
func finishGatherInline(ctx context.Context, a *arena.Arena, e uint64, stamp arena.Stamp, recv []byte, b blocks) error {
	if err := awaitFirst(ctx, a, e, stamp); err != nil {
		return err
	}
	for j := range a.Size() {
		if j != a.Index() {
			copy(b.of(recv, j), a.Inline(j, e)[:b.size[j]])
		}
	}
	return nil
}

func allGatherHalves(ctx context.Context, a *arena.Arena, stamp arena.Stamp, send, recv []byte, b blocks, copyBytes int) error {
	return allGatherHalvesFrom(ctx, a, stamp, send, recv, b, copyBytes, moveStart{})
}

// allGatherHalvesFrom is allGatherHalves from chunk from.off on.
func allGatherHalvesFrom(ctx context.Context, a *arena.Arena, stamp arena.Stamp, send, recv []byte, b blocks, copyBytes int, from moveStart) error {
	me, p := a.Index(), a.Size()
	chunk := moveChunk(a, copyBytes)
	own := b.off[me]
	for off := from.off; off < b.longest(); off += chunk {
		first := off == 0
		e := from.e
		if !from.resumes(off) {
			c := b.chunk(me, off, chunk) // 0 past the end of the own block
			e = a.Next()
			if c > 0 {
				copy(a.Half(me, e)[:c], send[off:off+c])
			}
			post(a, e, stamp, first)
			if c > 0 {
				args.CopyUnlessSame(recv[own+off:own+off+c], send[off:off+c])
			}
		}
		if err := await(ctx, a, e, stamp, first); err != nil {
			return err
		}
		for j := range p {
			if c := b.chunk(j, off, chunk); j != me && c > 0 {
				copy(recv[b.off[j]+off:b.off[j]+off+c], a.Half(j, e)[:c])
			}
		}
	}
	return nil
}
