package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Reduce reduces send over the ranks with op into recv on root (a local
// index); recv is written on root only (it may be nil elsewhere, and may be
// send itself on root). Avg and PreMulSum as in AllReduce.
//
// Small payloads go one-shot (every rank publishes, root reduces all p
// inputs); large ones through the AllReduce pipeline with the results
// copied out on root only, so the p ranks share the reduction work. Per
// rank and payload byte, reads+writes, large: 5(p-1)/p, plus 2 on root (4.5
// and 2.5 for p = 2); small: 2, plus 3(p-1) on root.
func Reduce(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int) error {
	if err := checkReduce(a, send, recv, dt, op, root); err != nil {
		return wrapOp("reduce", a, seq, err)
	}
	return wrapOp("reduce", a, seq, reduceRoot(ctx, a, seq, send, recv, dt, op, preMul, root, defaultTuning()))
}

func checkReduce(a *arena.Arena, send, recv []byte, dt reduce.DType, op reduce.Op, root int) error {
	if err := checkArena(a); err != nil {
		return err
	}
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := args.CheckRoot(root, a.Size()); err != nil {
		return err
	}
	if err := args.CheckElems("send", send, dt); err != nil {
		return err
	}
	if a.Index() != root {
		return nil
	}
	if err := args.CheckLen("recv", recv, len(send)); err != nil {
		return err
	}
	return args.CheckAlias(send, recv)
}

func reduceRoot(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	var err error
	r := &reduction{a: a, dt: dt, op: op, preMul: preMul, t: t,
		stamp: opStamp{kind: kindReduce, seq: seq, bytes: len(send), dt: dt, op: op, root: root}.encode()}
	switch n := len(send); {
	case a.Size() == 1:
		local(dt, op, preMul, recv, send)
	case n <= a.InlineBytes(): // empty calls too: they must meet their peers
		err = r.oneShotInline(ctx, send, recv, root)
	default:
		err = r.staged(ctx, send, recv, root)
	}
	endOp(a, err)
	return err
}
