package intra

import (
	"context"

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
	if err := checkReduction(dt, op); err != nil {
		return err
	}
	if err := checkElems("recv", recv, dt); err != nil {
		return err
	}
	m := len(recv)
	if err := checkLen("send", send, a.Size()*m); err != nil {
		return err
	}
	me := a.Index()
	return checkAliasAt(recv, send, send[me*m:(me+1)*m])
}

func reduceScatter(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	var err error
	stamp := opStamp{kind: kindReduceScatter, seq: seq, bytes: len(recv), dt: dt, op: op, root: noRoot}.encode()
	switch {
	case a.Size() == 1:
		local(dt, op, preMul, recv, send)
	case len(recv) == 0: // meets the peers all the same
		err = stampOnly(ctx, a, stamp)
	default:
		r := &reduction{a: a, dt: dt, op: op, preMul: preMul, t: t, stamp: stamp}
		err = r.scatter(ctx, send, recv)
	}
	endOp(a, err)
	return err
}

// scatter is the chunk loop of ReduceScatter.
func (r *reduction) scatter(ctx context.Context, send, recv []byte) error {
	a := r.a
	me, p, m := a.Index(), a.Size(), len(recv)
	slot := alignDown(min(r.t.sliceBytes, a.HalfBytes()/p), lineBytes)
	// The own input comes from send, except for PreMulSum (scaled first)
	// and in place from rank 2 on: reducing into recv overwrites it before
	// its turn in rank order (ranks 0 and 1 are the first pair, read
	// before the first write).
	inPlace := sameMemory(recv, send[me*m:(me+1)*m])
	ownShared := r.op == reduce.PreMulSum || (inPlace && me >= 2)
	for off := 0; off < m; off += slot {
		c := min(slot, m-off)
		e := a.Next()
		h := a.Half(me, e)
		for j := range p {
			if j != me || ownShared {
				publish(r.dt, r.op, r.preMul, h[j*slot:j*slot+c], send[j*m+off:j*m+off+c])
			}
		}
		if err := r.step(ctx, e, off == 0); err != nil {
			return err
		}
		out := recv[off : off+c]
		reduceInto(r.dt, r.op, out, p, func(j int) []byte {
			if j == me && !ownShared {
				return send[me*m+off : me*m+off+c]
			}
			return a.Half(j, e)[me*slot : me*slot+c]
		})
		finishAvg(r.dt, r.op, out, p)
	}
	return nil
}
