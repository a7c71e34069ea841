package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/transport/arena"
)

// Barrier returns once every rank of a has entered it: one stamped epoch,
// posted and awaited, no data.
func Barrier(ctx context.Context, a *arena.Arena, seq uint64) error {
	if err := checkArena(a); err != nil {
		return wrapOp("barrier", a, seq, err)
	}
	return wrapOp("barrier", a, seq, barrier(ctx, a, seq))
}

func barrier(ctx context.Context, a *arena.Arena, seq uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	err := stampOnly(ctx, a, opStamp{kind: kindBarrier, seq: seq, root: noRoot}.encode())
	endOp(a, err)
	return err
}
