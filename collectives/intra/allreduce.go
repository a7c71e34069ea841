package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// AllReduce reduces send over the ranks of a with op and leaves the result
// in recv on every rank. send and recv have the same length, a multiple of
// the element size; they may be the same memory (in place). Every rank
// calls it with the same arguments and seq but its own buffers, in the
// same order of operations (a call that differs fails on every rank with
// ErrMismatch).
//
// Avg sums, then divides by the number of ranks, once per element. PreMulSum
// multiplies each rank's input by preMul (reduce.Scale) before summing. All
// ranks end with bitwise identical results: every element is reduced by one
// rank, or by all in the same order 0..p-1.
//
// Protocols, by size (p ranks, n bytes; bytes each rank reads+writes per
// payload byte, from ALGORITHMS.md):
//
//   - n <= InlineBytes: one-shot inline. Each rank copies its input into its
//     inline slot (whose flag shares the first cache line) and reduces all p
//     slots into recv in rank order: 2 + 3(p-1) touched (5 for p = 2), all
//     of it in cache; one post and one wait per peer.
//   - n <= 1 MiB/(p-1): the same one-shot through the data halves, 1 MiB
//     per epoch.
//   - larger: the reduce-scatter/all-gather pipeline (rsag.go): (7p-6)/p
//     touched (4 for p = 2), of which only reading send once and writing
//     recv once reach memory; the shared chunks stay in cache.
//   - from 256 KiB to 1 MiB (p = 2), with AllReduceWith where the kernel
//     allows it, before the two above: the same reduce-scatter/all-gather
//     reading the peers' private buffers with process_vm_readv
//     (singlecopy_reduce.go): 7(p-1)/p touched (3.5 for p = 2).
func AllReduce(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	return AllReduceWith(ctx, a, nil, seq, send, recv, dt, op, preMul)
}

// AllReduceWith is AllReduce with the arena's single-copy state (nil: none,
// as AllReduce): payloads from 256 KiB to 1 MiB (at p = 2; 2 MiB/p
// beyond) then go through the single-copy protocol
// (singlecopy_reduce.go) where the ranks agreed that it works. Every rank
// of the call must pass a state, or none.
func AllReduceWith(ctx context.Context, a *arena.Arena, sc *SingleCopy, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	if err := checkAllReduce(a, send, recv, dt, op); err != nil {
		return wrapOp("allreduce", a, seq, err)
	}
	return wrapOp("allreduce", a, seq, allReduce(ctx, a, sc, seq, send, recv, dt, op, preMul, defaultTuning()))
}

func checkAllReduce(a *arena.Arena, send, recv []byte, dt reduce.DType, op reduce.Op) error {
	if err := checkArena(a); err != nil {
		return err
	}
	return args.CheckAllReduce(send, recv, dt, op)
}

func allReduce(ctx context.Context, a *arena.Arena, sc *SingleCopy, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	var err error
	st := opStamp{kind: kindAllReduce, seq: seq, bytes: len(send), dt: dt, op: op, root: noRoot}
	r := &reduction{a: a, dt: dt, op: op, preMul: preMul, t: t, sc: sc, stamp: st.encode()}
	switch n := len(send); {
	case a.Size() == 1:
		local(dt, op, preMul, recv, send)
	case n <= a.InlineBytes(): // empty calls too: they must meet their peers
		err = r.oneShotInline(ctx, send, recv, allRanks)
	case sc.usable(n, a.Size(), t):
		st.singleCopy = true
		r.stamp = st.encode()
		err = r.singleCopyOrShared(ctx, send, recv)
	default:
		err = r.staged(ctx, send, recv, allRanks)
	}
	endOp(a, err)
	return err
}

// allRanks, as the root of a reduction, means every rank wants the result.
const allRanks = -1

// reduction is one reduction in progress over an arena.
type reduction struct {
	a      *arena.Arena
	dt     reduce.DType
	op     reduce.Op
	preMul float64
	t      tuning
	sc     *SingleCopy // nil: no single-copy
	stamp  arena.Stamp // posted with the first epoch
	// stamped: the first epoch (stamp checked) has run already, the
	// protocol that follows posts none.
	stamped bool
}

// singleCopyOrShared runs the single-copy all_reduce when the ranks agree
// that it works, else, after the agreement's epochs, the protocol that
// the size takes through shared memory.
func (r *reduction) singleCopyOrShared(ctx context.Context, send, recv []byte) error {
	ok, err := r.sc.exchange(ctx, r.a, r.stamp, send, recv)
	switch {
	case err != nil:
		return err
	case ok:
		return r.singleCopy(ctx, send, recv)
	}
	r.stamped = true
	return r.staged(ctx, send, recv, allRanks)
}

// staged runs a reduction too large for the inline slots through the
// arena's data halves: one-shot up to oneShotLimit, else the pipeline.
func (r *reduction) staged(ctx context.Context, send, recv []byte, root int) error {
	if len(send) <= r.t.oneShotLimit(r.a.Size()) {
		return r.oneShotHalves(ctx, send, recv, root)
	}
	return r.rsag(ctx, send, recv, root)
}

// wants reports whether local rank me receives the result when root names
// the receiving rank (allRanks: all do).
func wants(me, root int) bool { return root == allRanks || root == me }

// oneShotInline: every rank publishes its whole input in its inline slot;
// the ranks that want the result reduce all slots in rank order.
func (r *reduction) oneShotInline(ctx context.Context, send, recv []byte, root int) error {
	a, n := r.a, len(send)
	me, p := a.Index(), a.Size()
	e := a.Next()
	publish(r.dt, r.op, r.preMul, a.Inline(me, e)[:n], send)
	postFirst(a, e, r.stamp)
	if err := awaitFirst(ctx, a, e, r.stamp); err != nil {
		return err
	}
	if wants(me, root) && n > 0 {
		reduceInto(r.dt, r.op, recv, p, func(j int) []byte { return a.Inline(j, e)[:n] })
		finishAvg(r.dt, r.op, recv, p)
	}
	return nil
}

// oneShotHalves is oneShotInline through the data halves, one chunk of at
// most t.oneShotChunk bytes per epoch. A chunk of send is published before
// the same chunk of recv is written, so in-place calls are safe.
func (r *reduction) oneShotHalves(ctx context.Context, send, recv []byte, root int) error {
	a := r.a
	me, p := a.Index(), a.Size()
	chunk := oneShotChunk(a, r.t)
	for off := 0; off < len(send); off += chunk {
		m := min(chunk, len(send)-off)
		e := a.Next()
		publish(r.dt, r.op, r.preMul, a.Half(me, e)[:m], send[off:off+m])
		if err := r.step(ctx, e, off == 0 && !r.stamped); err != nil {
			return err
		}
		if wants(me, root) {
			out := recv[off : off+m]
			reduceInto(r.dt, r.op, out, p, func(j int) []byte { return a.Half(j, e)[:m] })
			finishAvg(r.dt, r.op, out, p)
		}
	}
	return nil
}

// step posts epoch e and waits for every peer to post it; the first epoch
// of the op carries its stamp and checks the peers'.
func (r *reduction) step(ctx context.Context, e uint64, first bool) error {
	post(r.a, e, r.stamp, first)
	return await(ctx, r.a, e, r.stamp, first)
}
