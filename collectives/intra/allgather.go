package intra

import (
	"context"

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
	if err := checkLen("recv", recv, a.Size()*m); err != nil {
		return err
	}
	me := a.Index()
	return checkAliasAt(send, recv, recv[me*m:(me+1)*m])
}

func allGather(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m := len(send)
	if err := a.Begin(seq); err != nil {
		return err
	}
	me, p := a.Index(), a.Size()
	var err error
	stamp := opStamp{kind: kindAllGather, seq: seq, bytes: m, root: noRoot}.encode()
	switch {
	case p == 1:
		copyUnlessSame(recv, send)
	case m <= a.InlineBytes(): // empty calls too: they must meet their peers
		e := a.Next()
		copy(a.Inline(me, e)[:m], send)
		postFirst(a, e, stamp)
		copyUnlessSame(recv[me*m:(me+1)*m], send)
		if err = awaitFirst(ctx, a, e, stamp); err == nil {
			for j := range p {
				if j != me {
					copy(recv[j*m:(j+1)*m], a.Inline(j, e)[:m])
				}
			}
		}
	default:
		err = allGatherHalves(ctx, a, stamp, send, recv, t.copyBytes)
	}
	endOp(a, err)
	return err
}

func allGatherHalves(ctx context.Context, a *arena.Arena, stamp arena.Stamp, send, recv []byte, copyBytes int) error {
	me, p, m := a.Index(), a.Size(), len(send)
	chunk := alignDown(min(copyBytes, a.HalfBytes()), lineBytes)
	for off := 0; off < m; off += chunk {
		c := min(chunk, m-off)
		e := a.Next()
		copy(a.Half(me, e)[:c], send[off:off+c])
		first := off == 0
		post(a, e, stamp, first)
		copyUnlessSame(recv[me*m+off:me*m+off+c], send[off:off+c])
		if err := await(ctx, a, e, stamp, first); err != nil {
			return err
		}
		for j := range p {
			if j != me {
				copy(recv[j*m+off:j*m+off+c], a.Half(j, e)[:c])
			}
		}
	}
	return nil
}
