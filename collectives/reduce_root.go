package collectives

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// Reduce reduces send over all ranks with op into recv on root; recv is
// written on root only (it may be nil elsewhere, and may be send itself on
// root). Avg and PreMulSum as in AllReduce. Algorithms: Tree (small), Chain
// (large); Auto picks by size.
func Reduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, root int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("reduce", -1, err)
	}
	return wrapOp("reduce", ep.Rank(), reduceToRoot(ctx, ep, tag, send, recv, dt, op, root, o))
}

func reduceToRoot(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, root int, o Options) error {
	p, r := ep.Size(), ep.Rank()
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := checkOptions(o, Tree, Chain); err != nil {
		return err
	}
	if err := args.CheckRoot(root, p); err != nil {
		return err
	}
	if err := args.CheckElems("send", send, dt); err != nil {
		return err
	}
	if r == root {
		if err := args.CheckLen("recv", recv, len(send)); err != nil {
			return err
		}
		if err := args.CheckAlias(send, recv); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// PreMulSum: root scales into recv; other ranks into scratch.
	src := send
	if op == reduce.PreMulSum && len(send) > 0 {
		work := recv
		if r != root {
			work = make([]byte, len(send))
		}
		src = prepareInput(send, work, dt, op, o)
	}
	if p == 1 || len(send) == 0 {
		args.CopyUnlessSame(recv, src)
		finishAvg(recv, dt, op, p)
		return nil
	}
	algo := o.Algo
	if algo == Auto {
		algo = chooseReduce(p, len(send), o.chunkBytes(dt.Size()))
	}
	var err error
	if algo == Tree {
		err = treeReduce(ctx, ep, tag, src, recv, dt, op, root)
	} else {
		err = chainReduce(ctx, ep, tag, src, recv, dt, op, root, o.chunkBytes(dt.Size()))
	}
	if err == nil && r == root {
		finishAvg(recv, dt, op, p)
	}
	return err
}

// treeReduce is a binomial tree, the mirror of treeBroadcast. With
// v = (r - root) mod p, for k = 0, 1, ...: if bit k of v is set, send the
// accumulated value to v - 2^k and stop; else receive from v + 2^k (if it
// exists) and accumulate as (own) op (received), the lower rank's value on
// the left.
//
// ceil(log2 p) steps; every rank but root sends n bytes once, and rank v
// receives n from each of its children (root: ceil(log2 p) of them).
func treeReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, recv []byte, dt reduce.DType, op reduce.Op, root int) error {
	p, v := ep.Size(), mod(ep.Rank()-root, ep.Size())
	real := func(x int) int { return (x + root) % p }
	cur := src // the value accumulated so far (read-only until owned)
	owned := false
	var tmp []byte
	for mask := 1; mask < p; mask <<= 1 {
		if v&mask != 0 {
			if err := sendTo(ctx, ep, tag, real(v-mask), cur); err != nil {
				return fmt.Errorf("tree: %w", err)
			}
			return nil
		}
		if v+mask >= p {
			continue
		}
		if tmp == nil {
			tmp = make([]byte, len(src))
		}
		if err := recvFrom(ctx, ep, tag, real(v+mask), tmp); err != nil {
			return fmt.Errorf("tree: %w", err)
		}
		acc := cur
		if !owned {
			acc = recv // root accumulates in place in recv
			if v != 0 {
				acc = make([]byte, len(src))
			}
			owned = true
		}
		reduce.Reduce3(dt, op, acc, cur, tmp)
		cur = acc
	}
	args.CopyUnlessSame(recv, cur) // root only gets here
	return nil
}

// chainReduce is a pipelined chain root+1, root+2, ..., root+p-1, root:
// the first rank sends its input chunk by chunk; each next rank receives a
// chunk of the partial result, reduces it as (partial) op (own input) and
// forwards it; root reduces the last one into recv.
//
// Every rank but root sends n bytes and every rank but the first receives
// n: the time is about (p-2 + n/chunk) chunk transfers and reductions.
func chainReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, recv []byte, dt reduce.DType, op reduce.Op, root int, chunk int) error {
	p, r := ep.Size(), ep.Rank()
	pos := mod(r-root-1, p) // root is last
	prev, next := mod(r-1, p), mod(r+1, p)
	slot := min(chunk, len(src))
	pl := &pipeline{ep: ep, tag: tag, name: "chain", dt: dt, op: op}
	var slots []byte
	if pos > 0 && pos < p-1 {
		slots = make([]byte, slotsPerPipeline*slot)
	}
	var landing []byte
	if pos == p-1 {
		landing = make([]byte, slot)
	}
	for k := range numChunks(len(src), chunk) {
		own := chunkOf(src, k, chunk)
		switch {
		case pos == 0:
			pl.addSend(next, k, own, 0)
		case pos == p-1:
			pl.addRecv(recvItem{peer: prev, step: k, buf: landing[:len(own)], into: chunkOf(recv, k, chunk), with: own})
		default:
			buf := slots[(k%slotsPerPipeline)*slot:][:len(own)]
			after := max(k-slotsPerPipeline+1, 0) // the slot's last reader is done
			pl.addRecv(recvItem{peer: prev, step: k, buf: buf, after: after, into: buf, with: own})
			pl.addSend(next, k, buf, k+1)
		}
	}
	return pl.run(ctx)
}
