package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Broadcast copies root's send into recv on every rank, root included (root
// is a local index). send is read on root only (it may be recv itself; it
// may be nil elsewhere).
//
// Root publishes chunks (its inline slot for small payloads, else its data
// half, copyBytes per epoch), the others copy them out; root's own copy
// runs after its post, while the others copy. The double buffer lets root
// publish chunk k+1 while the others still copy chunk k. Per payload byte:
// root reads 2 and writes 2 (1 and 1 in place), the others read 1 and
// write 1.
func Broadcast(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, root int) error {
	if err := checkBroadcast(a, send, recv, root); err != nil {
		return wrapOp("broadcast", a, seq, err)
	}
	return wrapOp("broadcast", a, seq, broadcast(ctx, a, seq, send, recv, root, defaultTuning()))
}

func checkBroadcast(a *arena.Arena, send, recv []byte, root int) error {
	if err := checkArena(a); err != nil {
		return err
	}
	if err := args.CheckRoot(root, a.Size()); err != nil {
		return err
	}
	if a.Index() != root {
		return nil
	}
	if err := args.CheckLen("send", send, len(recv)); err != nil {
		return err
	}
	return args.CheckAlias(send, recv)
}

func broadcast(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, root int, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	var err error
	stamp := opStamp{kind: kindBroadcast, seq: seq, bytes: len(recv), root: root}.encode()
	switch n := len(recv); {
	case a.Size() == 1:
		args.CopyUnlessSame(recv, send)
	case n <= a.InlineBytes(): // empty calls too: they must meet their peers
		err = broadcastInline(ctx, a, stamp, send, recv, root)
	default:
		err = broadcastHalves(ctx, a, stamp, send, recv, root, t.copyBytes)
	}
	endOp(a, err)
	return err
}

func broadcastInline(ctx context.Context, a *arena.Arena, stamp arena.Stamp, send, recv []byte, root int) error {
	me, n := a.Index(), len(recv)
	e := a.Next()
	if me == root {
		copy(a.Inline(me, e)[:n], send)
		postFirst(a, e, stamp)
		args.CopyUnlessSame(recv, send)
	} else {
		postFirst(a, e, stamp)
	}
	return finishBroadcastInline(ctx, a, e, stamp, recv, root)
}

// finishBroadcastInline is broadcastInline after its post: wait for epoch
// e, check the stamps, copy root's payload out of its inline slot.
func finishBroadcastInline(ctx context.Context, a *arena.Arena, e uint64, stamp arena.Stamp, recv []byte, root int) error {
	if err := awaitFirst(ctx, a, e, stamp); err != nil {
		return err
	}
	if a.Index() != root {
		copy(recv, a.Inline(root, e)[:len(recv)])
	}
	return nil
}

func broadcastHalves(ctx context.Context, a *arena.Arena, stamp arena.Stamp, send, recv []byte, root int, copyBytes int) error {
	return broadcastHalvesFrom(ctx, a, stamp, send, recv, root, copyBytes, moveStart{})
}

// moveStart is where a data mover's chunk loop starts: at the chunk of
// offset off (a multiple of the chunk), whose epoch e (0: not taken yet)
// this rank already took and posted, having published its chunk and
// copied its own data, but not waited for. The zero value starts at the
// beginning. Export's C lane (lane.c) hands broadcasts and all_gathers
// over this way.
type moveStart struct {
	off int
	e   uint64
}

// resumes reports whether the chunk at off is from's, taken already.
func (from moveStart) resumes(off int) bool { return from.e != 0 && off == from.off }

// broadcastHalvesFrom is broadcastHalves from chunk from.off on.
func broadcastHalvesFrom(ctx context.Context, a *arena.Arena, stamp arena.Stamp, send, recv []byte, root int, copyBytes int, from moveStart) error {
	me := a.Index()
	chunk := moveChunk(a, copyBytes)
	for off := from.off; off < len(recv); off += chunk {
		m := min(chunk, len(recv)-off)
		first := off == 0
		e := from.e
		if !from.resumes(off) {
			e = a.Next()
			if me == root {
				copy(a.Half(me, e)[:m], send[off:off+m])
			}
			post(a, e, stamp, first)
			if me == root {
				args.CopyUnlessSame(recv[off:off+m], send[off:off+m])
			}
		}
		if err := await(ctx, a, e, stamp, first); err != nil {
			return err
		}
		if me != root {
			copy(recv[off:off+m], a.Half(root, e)[:m])
		}
	}
	return nil
}

// moveChunk is the bytes a data mover moves per epoch through the data
// halves.
func moveChunk(a *arena.Arena, copyBytes int) int {
	return alignDown(min(copyBytes, a.HalfBytes()), lineBytes)
}
