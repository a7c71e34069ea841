package intra

import (
	"context"
	"runtime"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/cma"
)

// The single-copy all_reduce: reduce-scatter, then all-gather, with every
// peer byte read straight from the peer's private buffer by
// process_vm_readv, nothing staged in shared memory.
//
// The vector is cut into windows of p slices as in the pipeline (rsag.go):
// slice (k, i) of window k belongs to rank i. With the buffers' addresses
// exchanged in the first epoch (SingleCopy.exchange), rank i, for each
// window k:
//
//	reduce   reads slice (k, i) of every peer's send into a scratch buffer
//	         (kept in cache), reduces the inputs in rank order 0..p-1 (its
//	         own straight from send) into its recv, divides for Avg;
//	post     epoch E+k: "slice (k, i) of my recv is final, and I read
//	         slice (k, i) of your sends for the last time";
//	gather   window k-1: for each peer j, waits until j posted E+k-1, then
//	         reads slice (k-1, j) of j's recv into its own recv.
//
// and gathers the last window after the loop. Two more epochs end the
// op: F, "I read all I need of your buffers", and F+1, "I saw everyone
// post F".
//
// In place (send == recv, as torch's all_reduce) is safe because each byte
// is touched by at most two ranks, in an order the posts enforce: slice
// (k, i) of rank m's buffer is read by rank i only (m's send, in i's
// reduce), and written by m only (its recv: by i's reduction if m == i,
// else by m's gather), and m gathers it only after i posted window k,
// which i does after its last read of it. A rank's own slice is reduced
// into its recv, where in place its own input lies: the reduction writes
// it first when the rank's input is one of the first two operands
// (Reduce3 allows that alias), otherwise it reduces into a scratch
// accumulator and copies. A rank returns successfully only after every
// peer posted F, so after every peer read what it needed of its send and
// recv.
//
// A rank that fails part-way (its context ends) returns at once, and its
// caller may then change its buffers while peers still read them. Peers
// only ever read a rank's memory, never write it, so only the peers'
// results can suffer, and they never return them: a peer succeeds only
// after seeing every rank post F+1, and a rank posts F+1 only once it saw
// every rank post F, after which nobody reads its buffers any more. (One
// epoch would not do: a rank failing in its wait for F after posting F
// would let a slow peer that still reads its buffers succeed.) For the
// same reason results are pulled, never pushed with process_vm_writev:
// a peer could write into buffers that a failed rank already handed back
// to its caller.
//
// Bytes each rank reads+writes per payload byte: reading the peers' slices
// into scratch 2(p-1)/p, reducing 3(p-1)/p, gathering 2(p-1)/p: 7(p-1)/p,
// 3.5 at p = 2 (the pipeline: 2 + 5(p-1)/p, 4.5). The kernel copies run at
// about half the speed of a user copy from memory here (page pinning):
// see ALGORITHMS.md for where that pays.
func (r *reduction) singleCopy(ctx context.Context, send, recv []byte) error {
	a, sc := r.a, r.sc
	me, p := a.Index(), a.Size()
	es := r.dt.Size()
	slice := alignDown(r.t.singleCopySlice, lineBytes)
	w := windows{elems: len(send) / es, es: es, p: p, per: slice / es}
	rounds := w.rounds()
	// The result goes straight to recv unless, in place, the own input
	// comes after the first two operands (see above).
	direct := !args.SameMemory(send, recv) || me < 2
	in, acc := sc.scratch(slice, !direct)
	ranks := a.Ranks()
	first := a.Next() // the epoch posted after window 0
	gather := func(k int) error {
		for j, b := range sc.peers {
			off, m := w.slice(k, j)
			if j == me || m == 0 {
				continue
			}
			if err := a.Wait(ctx, j, first+uint64(k)); err != nil {
				return err
			}
			if err := cma.ReadFast(b.pid, recv[off:off+m], b.recv+uintptr(off)); err != nil {
				return peerCopyError(ranks[j], b.pid, err)
			}
		}
		return nil
	}
	for k := range rounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		if k > 0 {
			a.Next() // first+k
		}
		if off, m := w.slice(k, me); m > 0 {
			out := recv[off : off+m]
			if !direct {
				out = acc[:m]
			}
			if err := r.reduceSlice(out, send[off:off+m], in, off, ranks); err != nil {
				return err
			}
			finishAvg(r.dt, r.op, out, p)
			if !direct {
				copy(recv[off:off+m], out)
			}
		}
		a.Post(first + uint64(k))
		if k > 0 {
			if err := gather(k - 1); err != nil {
				return err
			}
		}
	}
	if sc.beforeLastGather != nil {
		sc.beforeLastGather()
	}
	if err := gather(rounds - 1); err != nil {
		return err
	}
	// Two last epochs (see above): "I read all I need of your buffers",
	// then "I saw that everyone did".
	err := endReads(ctx, a)
	runtime.KeepAlive(send) // read by the peers until the first of them
	return err
}

// reduceSlice reduces the inputs of one slice at byte offset off in rank
// order into out: own is this rank's input, the peers' are read from their
// send buffers into the scratch buffers in. PreMulSum scales every input
// first (the own one into scratch).
func (r *reduction) reduceSlice(out, own []byte, in [2][]byte, off int, ranks []int) error {
	p, m := r.a.Size(), len(own)
	fetch := func(j int, buf []byte) ([]byte, error) {
		if j == r.a.Index() {
			if r.op == reduce.PreMulSum {
				reduce.Scale(r.dt, buf, own, r.preMul)
				return buf, nil
			}
			return own, nil
		}
		b := r.sc.peers[j]
		if err := cma.ReadFast(b.pid, buf, b.send+uintptr(off)); err != nil {
			return nil, peerCopyError(ranks[j], b.pid, err)
		}
		if r.op == reduce.PreMulSum {
			reduce.Scale(r.dt, buf, buf, r.preMul)
		}
		return buf, nil
	}
	x, err := fetch(0, in[0][:m])
	if err != nil {
		return err
	}
	y, err := fetch(1, in[1][:m])
	if err != nil {
		return err
	}
	reduce.Reduce3(r.dt, r.op, out, x, y)
	for j := 2; j < p; j++ {
		z, err := fetch(j, in[0][:m])
		if err != nil {
			return err
		}
		reduce.Reduce(r.dt, r.op, out, z)
	}
	return nil
}
