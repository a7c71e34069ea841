package intra

import (
	"context"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// The fast lane's all_reduce. A blocking all_reduce that AllReduceWith runs
// as one-shot in a single epoch runs in two halves: the first publishes
// this rank's input and posts the epoch, FinishLaneAllReduce waits for the
// peers, checks their stamps and reduces. Export's C fast lane runs both
// halves itself (export/lane.c) and hands over to FinishLaneAllReduce only
// when a wait outlasts its spin, or a stamp differs (lane_test.go models
// the first half in Go). The halves are exactly those of AllReduceWith (one-shot
// inline up to an inline slot, else one-shot through the data halves in one
// chunk, below the single-copy range), so ranks that take the lane and
// ranks that do not meet in the same epoch, with the same stamp, and reduce
// in the same order.

// LaneLimit is the largest all_reduce, in bytes, that AllReduceWith can run
// on a in one stamped epoch: the fast lane runs up to it (-1: none, with
// fewer than two local ranks), except the single-copy range until the ranks
// agreed against it (SingleCopyWords). Payloads up to
// a.InlineBytes() lie in the inline slots, larger ones in the data halves.
func LaneLimit(a *arena.Arena) int {
	if a == nil || a.Size() < 2 {
		return -1
	}
	t := defaultTuning()
	return max(min(t.oneShotLimit(a.Size()), oneShotChunk(a, t)), a.InlineBytes())
}

// SingleCopyWords is what the C lane needs to decline the single-copy
// range until the ranks agreed against it (lane_test.go's laneDeclines is
// the same test in Go): the
// agreement's state word (SingleCopyOff once the ranks agreed against it),
// and the smallest and largest payloads of the single-copy range among p
// ranks (min 0: never; state nil: no single-copy state).
func SingleCopyWords(sc *SingleCopy, p int) (state *int32, min, max int) {
	t := defaultTuning()
	if sc == nil || t.singleCopyMin == 0 {
		return nil, 0, 0
	}
	return (*int32)(unsafe.Pointer(&sc.state)), t.singleCopyMin, t.singleCopyLimit(p)
}

// SingleCopyOff is the state word's value once the ranks agreed against
// single-copy.
const SingleCopyOff = scOff

// oneShotChunk is the most bytes oneShotHalves moves per epoch.
func oneShotChunk(a *arena.Arena, t tuning) int {
	return alignDown(min(t.oneShotChunk, a.HalfBytes()), lineBytes)
}

// laneBuffer is local rank j's buffer of epoch e for an n-byte lane
// all_reduce: its inline slot or its data half.
func laneBuffer(a *arena.Arena, j int, e uint64, n int) []byte {
	if n <= a.InlineBytes() {
		return a.Inline(j, e)[:n]
	}
	return a.Half(j, e)[:n]
}

// AllReduceStamp is the stamp the first epoch of an all_reduce of n bytes
// carries (see stamp.go): for code outside Go that posts it.
func AllReduceStamp(seq uint64, n int, dt reduce.DType, op reduce.Op) arena.Stamp {
	return opStamp{kind: kindAllReduce, seq: seq, bytes: n, dt: dt, op: op, root: noRoot}.encode()
}

// FinishLaneAllReduce is the second half of a one-epoch all_reduce whose
// first half published this rank's input (scaled by preMul for PreMulSum)
// in its buffer of epoch e and posted it with the op's stamp: it waits
// until every peer has
// posted epoch e (n = len(recv) bytes each), fails with ErrMismatch when
// one runs another op, and reduces all buffers into recv in rank order. An
// error other than a mismatch breaks the arena, as for AllReduce.
func FinishLaneAllReduce(ctx context.Context, a *arena.Arena, seq, e uint64, recv []byte, dt reduce.DType, op reduce.Op) error {
	return finishLaneOneShot(ctx, a, seq, e, len(recv), recv, dt, op, allRanks)
}

// finishLaneOneShot is FinishLaneAllReduce (root allRanks) and
// FinishLaneReduce: wait, check the stamps, and on the ranks that want
// the result reduce the p buffers of n bytes into recv in rank order.
func finishLaneOneShot(ctx context.Context, a *arena.Arena, seq, e uint64, n int, recv []byte, dt reduce.DType, op reduce.Op, root int) error {
	r, name := laneReductionTo(a, seq, n, dt, op, 0, root)
	if err := a.Begin(seq); err != nil {
		return wrapOp(name, a, seq, err)
	}
	p := a.Size()
	err := awaitFirst(ctx, a, e, r.stamp)
	if err == nil && wants(a.Index(), root) && n > 0 {
		reduceInto(dt, op, recv, p, func(j int) []byte { return laneBuffer(a, j, e, n) })
		finishAvg(dt, op, recv, p)
	}
	endOp(a, err)
	return wrapOp(name, a, seq, err)
}

func laneReduction(a *arena.Arena, seq uint64, n int, dt reduce.DType, op reduce.Op, preMul float64) *reduction {
	return &reduction{a: a, dt: dt, op: op, preMul: preMul, stamp: AllReduceStamp(seq, n, dt, op)}
}

// laneReductionTo is the reduction of an all_reduce (root allRanks) or of
// a reduce to root handed over by the lane, with its stamp, and the op's
// name for errors.
func laneReductionTo(a *arena.Arena, seq uint64, n int, dt reduce.DType, op reduce.Op, preMul float64, root int) (*reduction, string) {
	r := laneReduction(a, seq, n, dt, op, preMul)
	if root == allRanks {
		return r, "allreduce"
	}
	r.stamp = ReduceStamp(seq, n, dt, op, root)
	return r, "reduce"
}

// The fast lane's pipeline. A blocking all_reduce that AllReduceWith runs
// as the reduce-scatter/all-gather pipeline (rsag.go), and a reduce that
// Reduce runs so, can run in code outside Go too (export/lane.c): the same rounds, epochs, stamp and
// reduction order, so that such ranks meet ranks on Go's path. When it
// cannot go on (a wait outlasts its spin, a stamp differs, a kernel
// declines) it hands the op over to FinishLanePipeline in the middle.

// LanePipeline is what code outside Go needs to run the pipeline on a:
// the smallest all_reduce, in bytes, that AllReduceWith runs as the
// pipeline (below it: one-shot; -1: none, with fewer than two local
// ranks) and the bytes of each rank's slice per round. The single-copy
// range is declined as for one-shot (SingleCopyWords).
func LanePipeline(a *arena.Arena) (minBytes, slot int) {
	if a == nil || a.Size() < 2 {
		return -1, 0
	}
	t := defaultTuning()
	return max(a.InlineBytes(), t.oneShotLimit(a.Size())) + 1, rsagSlot(a, t)
}

// FinishLanePipeline finishes an all_reduce pipeline (root allRanks, -1)
// or a reduce pipeline to root (a local index) that code outside Go began
// (LanePipeline): it ran rounds 0 to k-1 whole and, of round k, took
// epoch e, published this rank's slices and posted e (with the op's stamp
// when k is 0); waited says it also saw every peer post e and checked
// their stamps. recv is written on the ranks that want the result. An
// error other than a mismatch breaks the arena, as for AllReduce.
func FinishLanePipeline(ctx context.Context, a *arena.Arena, seq, e uint64, k int, waited bool, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int) error {
	r, name := laneReductionTo(a, seq, len(send), dt, op, preMul, root)
	if err := a.Begin(seq); err != nil {
		return wrapOp(name, a, seq, err)
	}
	r.t = defaultTuning()
	err := r.rsagFrom(ctx, send, recv, root, rsagStart{k: k, e: e, waited: waited})
	endOp(a, err)
	return wrapOp(name, a, seq, err)
}
