package collectives

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport"
)

// Broadcast copies root's send into recv on every rank, root included.
// send is read on root only (it may be recv itself; it may be nil
// elsewhere). Algorithms: Tree (small), Chain (large); Auto picks by size.
func Broadcast(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("broadcast", -1, err)
	}
	return wrapOp("broadcast", ep.Rank(), broadcast(ctx, ep, tag, send, recv, root, o))
}

func broadcast(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, o Options) error {
	p, r := ep.Size(), ep.Rank()
	if err := checkOptions(o, Tree, Chain); err != nil {
		return err
	}
	if err := args.CheckRoot(root, p); err != nil {
		return err
	}
	if r == root {
		if err := args.CheckLen("send", send, len(recv)); err != nil {
			return err
		}
		if err := args.CheckAlias(send, recv); err != nil {
			return err
		}
		args.CopyUnlessSame(recv, send)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == 1 || len(recv) == 0 {
		return nil
	}
	algo := o.Algo
	if algo == Auto {
		algo = chooseBroadcast(p, len(recv), o.chunkBytes(1))
	}
	if algo == Tree {
		return treeBroadcast(ctx, ep, tag, recv, root)
	}
	return chainBroadcast(ctx, ep, tag, recv, root, o.chunkBytes(1))
}

// treeBroadcast is a binomial tree. With v = (r - root) mod p, rank v
// receives from v - lowbit(v), then sends to v + 2^k for every 2^k below
// lowbit(v) (root: below p), largest first.
//
// ceil(log2 p) steps; root sends n·ceil(log2 p) bytes, a leaf nothing, and
// every rank other than root receives n.
func treeBroadcast(ctx context.Context, ep transport.Endpoint, tag transport.Tag, buf []byte, root int) error {
	p, v := ep.Size(), mod(ep.Rank()-root, ep.Size())
	real := func(x int) int { return (x + root) % p }
	mask := 1
	for ; mask < p; mask <<= 1 {
		if v&mask != 0 {
			if err := recvFrom(ctx, ep, tag, real(v-mask), buf); err != nil {
				return fmt.Errorf("tree: %w", err)
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < p {
			if err := sendTo(ctx, ep, tag, real(v+mask), buf); err != nil {
				return fmt.Errorf("tree: %w", err)
			}
		}
	}
	return nil
}

// chainBroadcast is a pipelined chain root, root+1, ..., root+p-1: every
// rank receives each chunk from its predecessor and forwards it to its
// successor at once, so all links carry chunks at the same time.
//
// Every rank but the last sends n bytes and every rank but root receives n;
// the time is about (p-2 + n/chunk) chunk transfers.
func chainBroadcast(ctx context.Context, ep transport.Endpoint, tag transport.Tag, buf []byte, root int, chunk int) error {
	p, pos := ep.Size(), mod(ep.Rank()-root, ep.Size())
	prev, next := mod(ep.Rank()-1, p), mod(ep.Rank()+1, p)
	pl := &pipeline{ep: ep, tag: tag, name: "chain"}
	for k := range numChunks(len(buf), chunk) {
		c := chunkOf(buf, k, chunk)
		if pos > 0 {
			pl.addRecv(recvItem{peer: prev, step: k, buf: c})
		}
		if pos < p-1 {
			after := 0
			if pos > 0 {
				after = k + 1
			}
			pl.addSend(next, k, c, after)
		}
	}
	return pl.run(ctx)
}
