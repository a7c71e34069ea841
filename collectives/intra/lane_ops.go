package intra

import (
	"context"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// The fast lane's other ops (lane.go has all_reduce's). Each runs in one
// stamped epoch (larger broadcasts, all_gathers and reduce_scatters chunk
// by chunk, below), in two halves as the lane's all_reduce does: the first
// publishes this rank's part and posts the epoch, the second waits for the
// peers, checks their stamps and takes what it needs from their buffers.
// Export's C fast lane runs both halves (export/lane.c) and hands an op
// over to the Finish functions below when a wait outlasts its spin, a
// stamp differs or a kernel declines. The epochs, stamps, copies and
// reduction orders are those of the one-epoch cases of broadcast.go,
// allgather.go, barrier.go, reduce.go and reducescatter.go, so ranks in
// the lane meet ranks that are not.
//
// The data movers: a broadcast root publishes its payload, every rank its
// all_gather block (a barrier nothing); each copies its own data into
// recv after posting, and the peers' payloads once they have posted.
// Payloads larger than an inline slot move chunk by chunk through the
// data halves, as Broadcast and AllGather move them, and are handed over
// at the chunk they are in.

// LaneMoveChunk is the bytes a broadcast, and each rank's block of an
// all_gather, moves per epoch through the data halves of a (-1: none, with
// fewer than two local ranks). Payloads up to a.InlineBytes() take one
// epoch through the inline slots; larger ones take chunks of this size.
func LaneMoveChunk(a *arena.Arena) int {
	if a == nil || a.Size() < 2 {
		return -1
	}
	return moveChunk(a, defaultTuning().copyBytes)
}

// SingleCopyGatherWords is what the C lane needs to decline the
// all_gathers that AllGatherWith may read in place: the agreement's state
// word (SingleCopyOff once the ranks agreed against single-copy) and the
// smallest and largest recv, in bytes, of its range (min 0: never; state
// nil: no single-copy state).
func SingleCopyGatherWords(sc *SingleCopy) (state *int32, min, max int) {
	t := defaultTuning()
	if sc == nil || t.singleCopyGatherMin == 0 {
		return nil, 0, 0
	}
	return (*int32)(unsafe.Pointer(&sc.state)), t.singleCopyGatherMin, t.singleCopyGatherMax
}

// BroadcastStamp, AllGatherStamp and BarrierStamp are the stamps the first
// epoch of those ops carries (n: the broadcast's bytes; m: each rank's
// all_gather block; root: a local index), for code outside Go that posts
// them.
func BroadcastStamp(seq uint64, n, root int) arena.Stamp {
	return opStamp{kind: kindBroadcast, seq: seq, bytes: n, root: root}.encode()
}

func AllGatherStamp(seq uint64, m int) arena.Stamp {
	return opStamp{kind: kindAllGather, seq: seq, bytes: m, root: noRoot}.encode()
}

func BarrierStamp(seq uint64) arena.Stamp {
	return opStamp{kind: kindBarrier, seq: seq, root: noRoot}.encode()
}

// FinishLaneBroadcast finishes a broadcast of len(recv) bytes that code
// outside Go ran as Broadcast does up to the chunk at offset off (0 for a
// payload in the inline slots; else a multiple of LaneMoveChunk), whose
// epoch e it took and posted (root: having published the chunk and copied
// it into recv), without waiting: it waits for every peer to post e, fails
// with ErrMismatch when one runs another op, copies root's chunk into recv
// and runs the rest. An error other than a mismatch breaks the arena, as
// for Broadcast.
func FinishLaneBroadcast(ctx context.Context, a *arena.Arena, seq, e uint64, off int, send, recv []byte, root int) error {
	if err := a.Begin(seq); err != nil {
		return wrapOp("broadcast", a, seq, err)
	}
	n := len(recv)
	stamp := BroadcastStamp(seq, n, root)
	var err error
	if n <= a.InlineBytes() {
		err = finishBroadcastInline(ctx, a, e, stamp, recv, root)
	} else {
		err = broadcastHalvesFrom(ctx, a, stamp, send, recv, root, defaultTuning().copyBytes, moveStart{off: off, e: e})
	}
	endOp(a, err)
	return wrapOp("broadcast", a, seq, err)
}

// FinishLaneAllGather is FinishLaneBroadcast for an all_gather into recv
// (every rank's block len(recv)/p bytes, send this rank's): it waits for
// epoch e, checks the stamps, copies the peers' chunks at off into recv
// and runs the rest.
func FinishLaneAllGather(ctx context.Context, a *arena.Arena, seq, e uint64, off int, send, recv []byte) error {
	if err := a.Begin(seq); err != nil {
		return wrapOp("allgather", a, seq, err)
	}
	p := a.Size()
	m := len(recv) / p
	stamp := AllGatherStamp(seq, m)
	var err error
	if m <= a.InlineBytes() {
		err = finishGatherInline(ctx, a, e, stamp, recv, evenBlocks(p, m))
	} else {
		err = allGatherHalvesFrom(ctx, a, stamp, send, recv, evenBlocks(p, m), defaultTuning().copyBytes, moveStart{off: off, e: e})
	}
	endOp(a, err)
	return wrapOp("allgather", a, seq, err)
}

// FinishLaneBarrier is the second half of a barrier whose first half
// posted epoch e: it waits for every peer to post e and checks their
// stamps.
func FinishLaneBarrier(ctx context.Context, a *arena.Arena, seq, e uint64) error {
	if err := a.Begin(seq); err != nil {
		return wrapOp("barrier", a, seq, err)
	}
	err := awaitFirst(ctx, a, e, BarrierStamp(seq))
	endOp(a, err)
	return wrapOp("barrier", a, seq, err)
}

// The fast lane's reduce and reduce_scatter. A blocking reduce that Reduce
// runs one-shot in one epoch (LaneLimit, as all_reduce) runs in the same
// two halves: the first publishes this rank's input and posts the epoch,
// the second waits, checks the stamps and reduces in rank order on root.
// A blocking reduce_scatter runs in C chunk by chunk as ReduceScatter does
// (LaneScatterSlot bytes of each block per epoch) and is handed over at
// the chunk it is in.

// ReduceStamp and ReduceScatterStamp are the stamps the first epoch of a
// reduce of n bytes to root (a local index), and of a reduce_scatter of m
// bytes per rank, carries.
func ReduceStamp(seq uint64, n int, dt reduce.DType, op reduce.Op, root int) arena.Stamp {
	return opStamp{kind: kindReduce, seq: seq, bytes: n, dt: dt, op: op, root: root}.encode()
}

func ReduceScatterStamp(seq uint64, m int, dt reduce.DType, op reduce.Op) arena.Stamp {
	return opStamp{kind: kindReduceScatter, seq: seq, bytes: m, dt: dt, op: op, root: noRoot}.encode()
}

// FinishLaneReduce is the second half of a one-epoch reduce of n bytes to
// root whose first half published this rank's input (scaled for PreMulSum)
// in its buffer of epoch e and posted it: it waits for every peer, checks
// their stamps and, on root, reduces all buffers into recv in rank order.
// Errors as for FinishLaneAllReduce.
func FinishLaneReduce(ctx context.Context, a *arena.Arena, seq, e uint64, n int, recv []byte, dt reduce.DType, op reduce.Op, root int) error {
	return finishLaneOneShot(ctx, a, seq, e, n, recv, dt, op, root)
}

// LaneScatterSlot is the bytes of each block that ReduceScatter on a
// reduces per epoch (-1: none, with fewer than two local ranks): a
// reduce_scatter of blocks up to it takes one epoch; the C lane runs
// larger ones chunk by chunk as ReduceScatter does.
func LaneScatterSlot(a *arena.Arena) int {
	if a == nil || a.Size() < 2 {
		return -1
	}
	return scatterSlot(a, defaultTuning())
}

// scatterSlot is the bytes of each block per epoch of ReduceScatter.
func scatterSlot(a *arena.Arena, t tuning) int {
	return alignDown(min(t.sliceBytes, a.HalfBytes()/a.Size()), lineBytes)
}

// FinishLaneReduceScatter finishes a reduce_scatter of send (p blocks of
// len(recv) bytes) that code outside Go ran as ReduceScatter does up to
// the chunk at offset off (a multiple of LaneScatterSlot), whose epoch e
// it took, published and posted (with the op's stamp when off is 0);
// waited says it also saw every peer post e and checked their stamps. It
// reduces that chunk and runs the rest. Errors as for FinishLaneAllReduce.
func FinishLaneReduceScatter(ctx context.Context, a *arena.Arena, seq, e uint64, off int, waited bool, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	if err := a.Begin(seq); err != nil {
		return wrapOp("reducescatter", a, seq, err)
	}
	p, m := a.Size(), len(recv)
	r := &reduction{a: a, dt: dt, op: op, preMul: preMul, t: defaultTuning(), stamp: ReduceScatterStamp(seq, m, dt, op)}
	var err error
	if m == 0 {
		err = awaitFirst(ctx, a, e, r.stamp) // the empty call: one stamped epoch
	} else {
		err = r.scatterFrom(ctx, send, recv, evenBlocks(p, m), scatterStart{off: off, e: e, waited: waited})
	}
	endOp(a, err)
	return wrapOp("reducescatter", a, seq, err)
}
