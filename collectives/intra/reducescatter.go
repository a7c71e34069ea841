package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// ReduceScatter reduces send over the ranks with op and leaves block i of
// the result in recv on rank i: len(send) == p*len(recv). In place: recv
// may be exactly the caller's own block of send. Avg and PreMulSum as in
// AllReduce.
//
// Blocks are cut into chunks of at most slot bytes; per epoch every rank
// publishes the next chunk of each block the others reduce (block j into
// slot j of its half) and reduces the chunk of its own block, inputs in
// rank order 0..p-1, straight into recv. Per rank and payload byte of send,
// reads+writes: publish 2(p-1)/p, reduce 3(p-1)/p: 5(p-1)/p (2.5 for p = 2).
func ReduceScatter(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	if err := checkReduceScatter(a, send, recv, dt, op); err != nil {
		return wrapOp("reducescatter", a, seq, err)
	}
	return wrapOp("reducescatter", a, seq, reduceScatter(ctx, a, seq, send, recv, dt, op, preMul, defaultTuning()))
}

func checkReduceScatter(a *arena.Arena, send, recv []byte, dt reduce.DType, op reduce.Op) error {
	if err := checkArena(a); err != nil {
		return err
	}
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := args.CheckElems("recv", recv, dt); err != nil {
		return err
	}
	m := len(recv)
	if err := args.CheckLen("send", send, a.Size()*m); err != nil {
		return err
	}
	me := a.Index()
	return args.CheckAliasAt(recv, send, send[me*m:(me+1)*m])
}

func reduceScatter(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, t tuning) error {
	stamp := opStamp{kind: kindReduceScatter, seq: seq, bytes: len(recv), dt: dt, op: op, root: noRoot}
	return scatterBlocks(ctx, a, seq, stamp, send, recv, evenBlocks(a.Size(), len(recv)), dt, op, preMul, t)
}

// ReduceScatterV is ReduceScatter with blocks of counts[i] elements for
// rank i, laid out one after the other in send in rank order:
// len(send) == sum(counts) elements and len(recv) == counts[rank]. Every
// rank passes the same counts. In place: recv may be exactly the caller's
// own block of send. Same protocol and cost as ReduceScatter; a rank whose
// block is shorter than the longest idles in the epochs past its end.
func ReduceScatterV(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, counts []int, dt reduce.DType, op reduce.Op, preMul float64) error {
	b, err := checkReduceScatterV(a, send, recv, counts, dt, op)
	if err != nil {
		return wrapOp("reducescatterv", a, seq, err)
	}
	stamp := opStamp{kind: kindReduceScatterV, seq: seq, bytes: len(send), dt: dt, op: op, root: noRoot}
	return wrapOp("reducescatterv", a, seq, scatterBlocks(ctx, a, seq, stamp, send, recv, b, dt, op, preMul, defaultTuning()))
}

func checkReduceScatterV(a *arena.Arena, send, recv []byte, counts []int, dt reduce.DType, op reduce.Op) (blocks, error) {
	if err := checkArena(a); err != nil {
		return blocks{}, err
	}
	if err := args.CheckReduction(dt, op); err != nil {
		return blocks{}, err
	}
	b, err := countBlocks(counts, a.Size(), dt.Size())
	if err != nil {
		return blocks{}, err
	}
	me := a.Index()
	if err := args.CheckLen("send", send, b.total()); err != nil {
		return blocks{}, err
	}
	if err := args.CheckLen("recv", recv, b.size[me]); err != nil {
		return blocks{}, err
	}
	return b, args.CheckAliasAt(recv, send, b.of(send, me))
}

// scatterBlocks runs a reduce-scatter of send's blocks b as one arena
// operation stamped with stamp.
func scatterBlocks(ctx context.Context, a *arena.Arena, seq uint64, stamp opStamp, send, recv []byte, b blocks, dt reduce.DType, op reduce.Op, preMul float64, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	var err error
	switch {
	case a.Size() == 1:
		local(dt, op, preMul, recv, send)
	case b.longest() == 0: // meets the peers all the same
		err = stampOnly(ctx, a, stamp.encode())
	default:
		r := &reduction{a: a, dt: dt, op: op, preMul: preMul, t: t, stamp: stamp.encode()}
		err = r.scatter(ctx, send, recv, b)
	}
	endOp(a, err)
	return err
}

// scatterOwnShared reports whether a rank publishes its own block (own,
// of send) for itself as it does the others: for PreMulSum (scaled first)
// and in place from rank 2 on, where reducing into recv overwrites the
// block before its turn in rank order (ranks 0 and 1 are the first pair,
// read before the first write). Otherwise its own input comes from send.
func scatterOwnShared(own, recv []byte, me int, op reduce.Op) bool {
	return op == reduce.PreMulSum || (me >= 2 && args.SameMemory(recv, own))
}

// scatter is the chunk loop of ReduceScatter over blocks b of send.
func (r *reduction) scatter(ctx context.Context, send, recv []byte, b blocks) error {
	return r.scatterFrom(ctx, send, recv, b, scatterStart{})
}

// scatterStart is where scatterFrom starts: at the chunk of offset off
// (a multiple of the slot) whose epoch e (0: not taken yet) this rank
// already published and posted; waited says it also saw every peer post e
// (and checked their stamps when off is 0). The zero value starts at the
// beginning. Export's C lane (lane.c) hands a reduce_scatter over this way.
type scatterStart struct {
	off    int
	e      uint64
	waited bool
}

// scatterFrom is scatter from chunk from.off on (see scatterStart).
func (r *reduction) scatterFrom(ctx context.Context, send, recv []byte, b blocks, from scatterStart) error {
	a := r.a
	me, p := a.Index(), a.Size()
	slot := scatterSlot(a, r.t)
	ownShared := scatterOwnShared(b.of(send, me), recv, me, r.op)
	own := b.off[me]
	for off := from.off; off < b.longest(); off += slot {
		var e uint64
		var err error
		switch first := off == 0; {
		case off == from.off && from.e != 0 && from.waited:
			e = from.e
		case off == from.off && from.e != 0:
			e = from.e
			err = await(ctx, a, e, r.stamp, first)
		default:
			e = a.Next()
			h := a.Half(me, e)
			for j := range p {
				if c := b.chunk(j, off, slot); c > 0 && (j != me || ownShared) {
					publish(r.dt, r.op, r.preMul, h[j*slot:j*slot+c], send[b.off[j]+off:b.off[j]+off+c])
				}
			}
			err = r.step(ctx, e, first)
		}
		if err != nil {
			return err
		}
		c := b.chunk(me, off, slot)
		if c == 0 {
			continue // past the end of the own block: only meets the peers
		}
		out := recv[off : off+c]
		reduceInto(r.dt, r.op, out, p, func(j int) []byte {
			if j == me && !ownShared {
				return send[own+off : own+off+c]
			}
			return a.Half(j, e)[me*slot : me*slot+c]
		})
		finishAvg(r.dt, r.op, out, p)
	}
	return nil
}
