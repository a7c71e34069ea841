package intra

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// The reduce-scatter/all-gather pipeline for large reductions.
//
// The vector is cut into windows of p slices of at most slot bytes each;
// round k handles window k. A data half holds p publication slots (slot j:
// the slice that rank j reduces) and one result slot, all slot bytes long.
// With e the epoch of round k, rank i:
//
//	write  publish slices j != i of window k into slot j of its half e
//	post e, wait for all peers to post e
//	read   reduce slice i of window k, inputs in rank order 0..p-1 (its own
//	       straight from send, the others from slot i of each peer's half e),
//	       into the result slot of its half e+1 and, in the same pass, into
//	       slice i of window k of recv ("direct"; Avg divides in the same
//	       pass; non-roots of Reduce write the slot only)
//	       copy every peer's result slot of half e (window k-1) into recv
//	       (and its own too where not direct)
//
// and one last epoch copies the results of the last window. So rounds are
// pipelined: ranks publish window k+1 while their peers still copy window
// k-1. Writing the result into half e+1 during epoch e is allowed: all peers
// have posted e, so they are done with epoch e-1, the same parity.
//
// Bytes each rank reads+writes per payload byte (direct): publish 2(p-1)/p,
// reduce 3(p-1)/p + 1/p (p-1 passes over a slice of n/p, the last writing
// two destinations), copy-out 2(p-1)/p: (7p-6)/p, 4 for p = 2 (4.5 before
// the owner wrote recv itself). Only reading send once and writing recv
// once go to memory; the shared slots (p+1 per half, two halves per rank)
// stay in cache.
//
// In place is safe: window k of send is only read in round k (published,
// then reduced), and window k of recv is written in round k only where
// it was just read (the own slice, by the reduction that reads it, each
// block loaded before it is stored), else in the next epoch.
// root == allRanks copies results out on every rank, else on root only
// (Reduce).
func (r *reduction) rsag(ctx context.Context, send, recv []byte, root int) error {
	return r.rsagFrom(ctx, send, recv, root, rsagStart{})
}

// rsagStart says where rsagFrom begins: at round k, whose epoch e (when
// not 0) code outside Go has already taken, published into and posted;
// waited: it also saw every peer post e and checked their stamps.
type rsagStart struct {
	k      int
	e      uint64
	waited bool
}

// rsagSlot is the bytes of each rank's slice per round of the pipeline on
// a.
func rsagSlot(a *arena.Arena, t tuning) int {
	p := a.Size()
	return alignDown(min(t.rsagSlice(p), a.HalfBytes()/(p+1)), lineBytes)
}

// rsagFrom is rsag from round from.k on (see rsagStart).
func (r *reduction) rsagFrom(ctx context.Context, send, recv []byte, root int, from rsagStart) error {
	a := r.a
	me, p := a.Index(), a.Size()
	es := r.dt.Size()
	slot := rsagSlot(a, r.t)
	w := windows{elems: len(send) / es, es: es, p: p, per: slot / es}
	res := p * slot // offset of the result slot in a half
	// PreMulSum reduces scaled inputs: the own one is published too.
	ownShared := r.op == reduce.PreMulSum
	// direct: the own slice's result goes into recv in the reduction's
	// pass (and into the result slot for the peers), so the copy-out only
	// copies the peers' results. Non-roots of Reduce have no recv to write.
	direct := wants(me, root)
	rounds := w.rounds()
	for k := from.k; k <= rounds; k++ {
		first := k == 0 && !r.stamped
		resumed := k == from.k && from.e != 0
		var err error
		var e uint64
		switch {
		case resumed && from.waited:
			e = from.e
		case resumed:
			e = from.e
			err = await(ctx, a, e, r.stamp, first)
		default:
			e = a.Next()
			if k < rounds {
				h := a.Half(me, e)
				for j := range p {
					if j != me || ownShared {
						off, m := w.slice(k, j)
						publish(r.dt, r.op, r.preMul, h[j*slot:j*slot+m], send[off:off+m])
					}
				}
			}
			err = r.step(ctx, e, first)
		}
		if err != nil {
			return err
		}
		if k < rounds {
			off, m := w.slice(k, me)
			out := a.Half(me, e+1)[res : res+m]
			in := func(j int) []byte {
				if j == me && !ownShared {
					return send[off : off+m]
				}
				return a.Half(j, e)[me*slot : me*slot+m]
			}
			if direct {
				reduceIntoDup(r.dt, r.op, recv[off:off+m], out, p, in)
			} else {
				reduceInto(r.dt, r.op, out, p, in)
				finishAvg(r.dt, r.op, out, p)
			}
		}
		if k > 0 && wants(me, root) {
			for j := range p {
				if j != me || !direct {
					off, m := w.slice(k-1, j)
					copy(recv[off:off+m], a.Half(j, e)[res:res+m])
				}
			}
		}
	}
	return nil
}

// windows cuts elems elements into rounds of p slices of at most per
// elements; the last, partial window is shared as evenly as possible (the
// first slices get one element more).
type windows struct {
	elems, es, p, per int
}

func (w windows) rounds() int {
	win := w.p * w.per
	return (w.elems + win - 1) / win
}

// slice returns the byte offset and length of slice j of window k.
func (w windows) slice(k, j int) (off, n int) {
	win := w.p * w.per
	start := k * win
	size := min(win, w.elems-start)
	base, extra := size/w.p, size%w.p
	lo := start + j*base + min(j, extra)
	if j < extra {
		base++
	}
	return lo * w.es, base * w.es
}
