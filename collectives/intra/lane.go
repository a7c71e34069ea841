package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// The fast lane's all_reduce. A small blocking all_reduce (pgbackend's
// fast lane) runs AllReduce's one-shot inline protocol in two halves:
// StartInlineAllReduce publishes this rank's input and posts the epoch,
// FinishInlineAllReduce waits for the peers, checks their stamps and
// reduces. Export's C fast lane runs both halves itself (export/lane.c)
// and hands over to FinishInlineAllReduce only when a wait outlasts its
// spin or a stamp differs. The halves are exactly those of AllReduce, so
// ranks that take the lane and ranks that do not meet in the same epoch,
// with the same stamp, and reduce in the same order.

// FitsInline reports whether an all_reduce of n bytes on a runs as
// one-shot inline: at least two local ranks, and n within an inline slot.
func FitsInline(a *arena.Arena, n int) bool {
	return a != nil && a.Size() >= 2 && n <= a.InlineBytes()
}

// AllReduceStamp is the stamp the first epoch of an all_reduce of n bytes
// carries (see stamp.go): for code outside Go that posts it.
func AllReduceStamp(seq uint64, n int, dt reduce.DType, op reduce.Op) arena.Stamp {
	return opStamp{kind: kindAllReduce, seq: seq, bytes: n, dt: dt, op: op, root: noRoot}.encode()
}

// CheckAllReduce returns the error AllReduce would refuse its arguments
// with, or nil.
func CheckAllReduce(a *arena.Arena, send, recv []byte, dt reduce.DType, op reduce.Op) error {
	return checkAllReduce(a, send, recv, dt, op)
}

// StartInlineAllReduce is the first half of a one-shot inline all_reduce
// (FitsInline must hold): it publishes send (scaled by preMul for
// PreMulSum) in this rank's inline slot of the next epoch and posts it, and
// returns that epoch for FinishInlineAllReduce. On error nothing was
// posted.
func StartInlineAllReduce(a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) (uint64, error) {
	if err := checkAllReduce(a, send, recv, dt, op); err != nil {
		return 0, wrapOp("allreduce", a, seq, err)
	}
	if !FitsInline(a, len(send)) {
		return 0, wrapOp("allreduce", a, seq, invalidf("%d bytes on %d ranks is not an inline all_reduce", len(send), a.Size()))
	}
	if err := a.Begin(seq); err != nil {
		return 0, wrapOp("allreduce", a, seq, err)
	}
	r := inlineReduction(a, seq, len(send), dt, op, preMul)
	e := a.Next()
	r.publishInline(e, send)
	a.End(nil)
	return e, nil
}

// FinishInlineAllReduce is the second half: it waits until every peer has
// posted epoch e (n = len(recv) bytes each), fails with ErrMismatch when
// one runs another op, and reduces all slots into recv in rank order. An
// error other than a mismatch breaks the arena, as for AllReduce.
func FinishInlineAllReduce(ctx context.Context, a *arena.Arena, seq, e uint64, recv []byte, dt reduce.DType, op reduce.Op) error {
	if err := a.Begin(seq); err != nil {
		return wrapOp("allreduce", a, seq, err)
	}
	r := inlineReduction(a, seq, len(recv), dt, op, 0)
	err := r.finishInline(ctx, e, len(recv), recv, allRanks)
	endOp(a, err)
	return wrapOp("allreduce", a, seq, err)
}

func inlineReduction(a *arena.Arena, seq uint64, n int, dt reduce.DType, op reduce.Op, preMul float64) *reduction {
	return &reduction{a: a, dt: dt, op: op, preMul: preMul, stamp: AllReduceStamp(seq, n, dt, op)}
}
