// Package inplace runs collectives on symmetric memory (transport/symm):
// buffers that every rank of a communicator allocated at the same offset of
// one symmetric allocation, which every rank maps. A rank reads its peers'
// inputs where they lie and writes results straight into their outputs, so
// no byte goes through a staging buffer. All_reduce and reduce_scatter are
// here, broadcast and all_gather in movement.go.
//
// All_reduce, for p ranks and n bytes: each rank owns a piece of n/p bytes,
// reads it from every rank's input and writes the reduced piece into every
// rank's output, folding in rank order (so every rank receives the same
// bits). Bytes per rank: n reads and n writes; at 2 ranks one pass that reads
// both inputs and writes both outputs, against the arena's copy in, reduce
// and copy out.
//
// An entry barrier (symm.Window.Enter) makes every input ready and checks
// that the ranks agree on the op; an exit barrier (Leave) keeps every rank
// from reusing its buffers while a peer still reads or writes them.
package inplace

import (
	"context"
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/symm"
)

// chunkBytes is the unit of the fold across more than two ranks: the
// accumulator stays in cache while every input is added to it.
const chunkBytes = 32 << 10

// Op codes in the description Enter compares (the others in movement.go).
const opAllReduce = 1

// Supported says whether AllReduce runs dt under op: every valid pair but
// PreMulSum, whose scaling of each input the fold does not do.
func Supported(dt reduce.DType, op reduce.Op) bool {
	return reduce.Check(dt, op) == nil && op != reduce.PreMulSum
}

// AllReduce reduces the n bytes at sendOff of every rank's region of w into
// the n bytes at recvOff of every rank's region. sendOff == recvOff is in
// place; otherwise the spans must not overlap. ch is the window's channel
// (the communicator's stream), seq the op's sequence number on it; every
// rank must pass the same ch, seq, offsets, n, dt and op.
func AllReduce(ctx context.Context, w *symm.Window, ch int, seq uint64, sendOff, recvOff, n int, dt reduce.DType, op reduce.Op, timeout time.Duration) error {
	if !Supported(dt, op) {
		return fmt.Errorf("in-place allreduce: %w: %s %s", symm.ErrInvalid, dt, op)
	}
	es := dt.Size()
	if n%es != 0 || sendOff%es != 0 || recvOff%es != 0 {
		return fmt.Errorf("in-place allreduce: %w: %d bytes at offsets %d and %d are not whole %s elements", symm.ErrInvalid, n, sendOff, recvOff, dt)
	}
	if sendOff != recvOff && sendOff < recvOff+n && recvOff < sendOff+n {
		return fmt.Errorf("in-place allreduce: %w: send [%d, %d) and recv [%d, %d) overlap", symm.ErrInvalid, sendOff, sendOff+n, recvOff, recvOff+n)
	}
	p, me := w.Size(), w.Rank()
	in, out := make([][]byte, p), make([][]byte, p)
	for r := range p {
		region, err := w.Region(r)
		if err != nil {
			return fmt.Errorf("in-place allreduce rank %d: %w", me, err)
		}
		if sendOff < 0 || recvOff < 0 || n > len(region)-max(sendOff, recvOff) {
			return fmt.Errorf("in-place allreduce: %w: %d bytes at offsets %d and %d outside a region of %d bytes", symm.ErrInvalid, n, sendOff, recvOff, len(region))
		}
		in[r], out[r] = region[sendOff:sendOff+n], region[recvOff:recvOff+n]
	}
	desc := [symm.DescWords]uint64{seq, opAllReduce | uint64(dt)<<8 | uint64(op)<<16, uint64(sendOff), uint64(recvOff), uint64(n)}
	return run(ctx, w, ch, desc, timeout, "allreduce", func() {
		lo, hi := piece(n/es, p, me)
		foldPiece(dt, op, in, out, lo*es, hi*es, es, sendOff == recvOff)
	})
}

// piece is rank r's elements [lo, hi) of count split among p ranks, the
// first count%p pieces one element longer.
func piece(count, p, r int) (lo, hi int) {
	q, extra := count/p, count%p
	lo = r*q + min(r, extra)
	hi = lo + q
	if r < extra {
		hi++
	}
	return lo, hi
}

// foldPiece writes the reduction of bytes [lo, hi) of every input into
// every output, folding in rank order: into rank 0's output, whose span a
// rank's own input may share (in place) but no input of a later rank does.
func foldPiece(dt reduce.DType, op reduce.Op, in, out [][]byte, lo, hi, es int, inPlace bool) {
	p := len(in)
	divisor := 1
	if op == reduce.Avg {
		divisor = p
	}
	if p == 1 {
		if !inPlace {
			copy(out[0][lo:hi], in[0][lo:hi])
		}
		return
	}
	if p == 2 {
		reduce.Reduce3DupDivide(dt, op, out[0][lo:hi], out[1][lo:hi], in[0][lo:hi], in[1][lo:hi], divisor)
		return
	}
	step := chunkBytes / es * es
	for a := lo; a < hi; a += step {
		b := min(a+step, hi)
		acc := out[0][a:b]
		reduce.Reduce3(dt, op, acc, in[0][a:b], in[1][a:b])
		for k := 2; k < p-1; k++ {
			reduce.Reduce(dt, op, acc, in[k][a:b])
		}
		reduce.Reduce3DupDivide(dt, op, acc, out[p-1][a:b], acc, in[p-1][a:b], divisor)
		for k := 1; k < p-1; k++ {
			copy(out[k][a:b], acc)
		}
	}
}

// ReduceScatter reduces block r (n bytes) of the p·n bytes at sendOff of
// every rank's region into recv on rank r, folding in rank order. recv is
// this rank's own memory (symmetric or not; this rank's block of its send
// included): no other rank writes it.
func ReduceScatter(ctx context.Context, w *symm.Window, ch int, seq uint64, sendOff int, recv []byte, dt reduce.DType, op reduce.Op, timeout time.Duration) error {
	if !Supported(dt, op) {
		return fmt.Errorf("in-place reducescatter: %w: %s %s", symm.ErrInvalid, dt, op)
	}
	p, me, n, es := w.Size(), w.Rank(), len(recv), dt.Size()
	if n%es != 0 || sendOff%es != 0 {
		return fmt.Errorf("in-place reducescatter: %w: blocks of %d bytes at offset %d are not whole %s elements", symm.ErrInvalid, n, sendOff, dt)
	}
	in := make([][]byte, p)
	for r := range p {
		var err error
		if in[r], err = span(w, r, sendOff+me*n, n); err != nil {
			return fmt.Errorf("in-place reducescatter rank %d: %w", me, err)
		}
	}
	desc := [symm.DescWords]uint64{seq, opReduceScatter | uint64(dt)<<8 | uint64(op)<<16, uint64(sendOff), uint64(n)}
	return run(ctx, w, ch, desc, timeout, "reducescatter", func() {
		foldInto(dt, op, in, recv, es)
	})
}

// foldInto writes the rank-order reduction of the inputs into out. out
// may be one of the inputs (in place): each chunk then goes through a
// scratch accumulator when that input is read after the fold has begun
// writing out (rank 2 or later); otherwise it folds into out itself.
func foldInto(dt reduce.DType, op reduce.Op, in [][]byte, out []byte, es int) {
	p := len(in)
	if p == 1 {
		args.CopyUnlessSame(out, in[0])
		return
	}
	aliased := false
	for _, x := range in[2:] {
		aliased = aliased || args.SameMemory(x, out)
	}
	step := chunkBytes / es * es // each chunk stays in cache while every input is added
	var acc []byte
	if aliased {
		acc = make([]byte, min(step, len(out)))
	}
	for a := 0; a < len(out); a += step {
		b := min(a+step, len(out))
		c := out[a:b]
		if aliased {
			c = acc[:b-a]
		}
		reduce.Reduce3(dt, op, c, in[0][a:b], in[1][a:b])
		for k := 2; k < p; k++ {
			reduce.Reduce(dt, op, c, in[k][a:b])
		}
		if op == reduce.Avg {
			reduce.DivideBy(dt, c, p)
		}
		if aliased {
			copy(out[a:b], c)
		}
	}
}
