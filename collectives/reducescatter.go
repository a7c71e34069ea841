package collectives

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// ReduceScatter reduces send over all ranks with op and leaves block rank
// of the result in recv: len(send) == size*len(recv). In place: recv may be
// exactly rank's own block of send. Avg and PreMulSum as in AllReduce.
// Algorithm: Ring.
func ReduceScatter(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("reducescatter", -1, err)
	}
	counts := make([]int, ep.Size())
	if dt.Valid() {
		for i := range counts {
			counts[i] = len(recv) / dt.Size()
		}
		if err := args.CheckElems("recv", recv, dt); err != nil {
			return wrapOp("reducescatter", ep.Rank(), err)
		}
	}
	return wrapOp("reducescatter", ep.Rank(), reduceScatterV(ctx, ep, tag, send, recv, counts, dt, op, o))
}

// ReduceScatterV is ReduceScatter with a size per rank: counts[i] is the
// number of ELEMENTS of rank i's block, len(send) == sum(counts) elements,
// and len(recv) == counts[rank] elements. Algorithm: Ring.
func ReduceScatterV(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, counts []int, dt reduce.DType, op reduce.Op, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("reducescatterv", -1, err)
	}
	return wrapOp("reducescatterv", ep.Rank(), reduceScatterV(ctx, ep, tag, send, recv, counts, dt, op, o))
}

func reduceScatterV(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, counts []int, dt reduce.DType, op reduce.Op, o Options) error {
	p, r := ep.Size(), ep.Rank()
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := checkOptions(o, Ring); err != nil {
		return err
	}
	if err := args.CheckCounts("counts", counts, p); err != nil {
		return err
	}
	es := dt.Size()
	if err := args.CheckLen("send", send, sum(counts)*es); err != nil {
		return err
	}
	if err := args.CheckLen("recv", recv, counts[r]*es); err != nil {
		return err
	}
	bl := countBlocks(counts, es)
	if err := args.CheckAliasAt(recv, send, bl.of(send, r)); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	src := send
	if op == reduce.PreMulSum {
		src = make([]byte, len(send))
		reduce.Scale(dt, src, send, o.PreMul)
	}
	if p == 1 {
		args.CopyUnlessSame(recv, src)
		finishAvg(recv, dt, op, p)
		return nil
	}
	return ringReduceScatter(ctx, ep, tag, src, recv, bl, dt, op, o.chunkBytes(es))
}

// slotsPerPipeline is the number of chunk-sized scratch slots a pipeline
// that forwards reduced chunks keeps: how far its receiver may run ahead of
// its sender.
const slotsPerPipeline = 4

// ringReduceScatter reduces block B[i] onto rank i around the ring. Rank r
// sends to r+1 and receives from r-1:
//
//	step s = 0..p-2: send B[r-s-1] (own input at step 0, else the partial
//	    sum received at step s-1), receive B[r-s-2] and reduce it as
//	    (partial received) op (own input of that block).
//	    At the last step the received block is B[r] and the reduction lands
//	    in recv (divided, for Avg).
//
// Each rank sends n - |B[r]| bytes, (p-1)/p·n for equal blocks. Partial
// sums wait in a ring of slotsPerPipeline chunk slots until forwarded.
func ringReduceScatter(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, recv []byte, bl blocks, dt reduce.DType, op reduce.Op, chunk int) error {
	p, r := ep.Size(), ep.Rank()
	right, left := mod(r+1, p), mod(r-1, p)
	largest := 0
	for _, s := range bl.size {
		largest = max(largest, s)
	}
	slot := min(chunk, largest)
	slots := make([]byte, slotsPerPipeline*slot)
	landing := make([]byte, slot)

	pl := &pipeline{ep: ep, tag: tag, name: "ring", dt: dt, op: op, divisor: p}
	sendsAtStep0 := 0
	forwarded := 0 // intermediate receives so far; send i forwards receive i-sendsAtStep0
	for s := range p - 1 {
		out := bl.of(src, mod(r-s-1, p))
		for k := range numChunks(len(out), chunk) {
			if s == 0 {
				pl.addSend(right, s, chunkOf(out, k, chunk), 0)
				continue
			}
			j := len(pl.sends) - sendsAtStep0 // the receive this send forwards
			n := len(chunkOf(out, k, chunk))
			pl.addSend(right, s, slots[(j%slotsPerPipeline)*slot:][:n], j+1)
		}
		if s == 0 {
			sendsAtStep0 = len(pl.sends)
		}

		b := mod(r-s-2, p)
		in := bl.of(src, b)
		for k := range numChunks(len(in), chunk) {
			with := chunkOf(in, k, chunk)
			if s == p-2 {
				pl.addRecv(recvItem{
					peer: left, step: s, buf: landing[:len(with)],
					into: chunkOf(recv, k, chunk), with: with, divide: op == reduce.Avg,
				})
				continue
			}
			j := forwarded
			forwarded++
			buf := slots[(j%slotsPerPipeline)*slot:][:len(with)]
			after := 0
			if j >= slotsPerPipeline {
				after = sendsAtStep0 + j - slotsPerPipeline + 1 // the slot's last reader is done
			}
			pl.addRecv(recvItem{peer: left, step: s, buf: buf, after: after, into: buf, with: with})
		}
	}
	return pl.run(ctx)
}
