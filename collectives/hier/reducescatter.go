package hier

import (
	"context"
	"fmt"
	"slices"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// ReduceScatter reduces send (size blocks of b bytes, block r for rank r)
// over every rank and leaves block rank in recv (b bytes); in place when
// recv is exactly the caller's own block of send.
//
//  1. intra: each host reduce-scatters send in its arena, laid out local
//     rank after local rank: local rank i gets the host's partial sums of
//     the blocks it forwards (its own and those of the other hosts' ranks
//     it is paired with, as in AllGather), after a local copy of p·b;
//  2. inter: every rank sends each of those partials straight to the
//     block's rank, all at once, and receives its own block's partial
//     from every other host;
//  3. each rank combines the hosts' partials of its block in host order.
//
// Host h sends (p-R_h)·b bytes across and receives (H-1)·R_h·b, the least
// any algorithm moves. A rank alone on its host forwards its own input.
// Avg sums in every phase and divides once, PreMulSum scales in phase 1.
func (c *Comm) ReduceScatter(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	return c.wrapOp("reducescatter", c.reduceScatter(ctx, tag, send, recv, dt, op, preMul))
}

func (c *Comm) reduceScatter(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	c.last = Times{}
	me, p, b := c.Rank(), c.Size(), len(recv)
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := args.CheckElems("recv", recv, dt); err != nil {
		return err
	}
	if err := args.CheckLen("send", send, p*b); err != nil {
		return err
	}
	if err := args.CheckAliasAt(recv, send, send[me*b:][:b]); err != nil {
		return err
	}
	first, later := reduce.Phases(op)
	mine := c.blocks[c.local]
	// partial holds the host's partial sum of block mine[k] at k·b.
	var partial []byte
	switch {
	case c.inHost != nil:
		done := c.timeArena()
		packed := make([]byte, p*b)
		for r := range p {
			copy(packed[c.packedAt[r]*b:][:b], send[r*b:][:b])
		}
		counts := make([]int, len(c.blocks))
		for i, ranks := range c.blocks {
			counts[i] = len(ranks) * b / dt.Size()
		}
		partial = make([]byte, len(mine)*b)
		err := c.inHost.ReduceScatterV(ctx, tag, packed, partial, counts, dt, first, preMul)
		done()
		if err != nil {
			return fmt.Errorf("phase 1 (reduce-scatter in host %d): %w", c.host, err)
		}
	case first == reduce.PreMulSum:
		partial = make([]byte, len(send))
		reduce.Scale(dt, partial, send, preMul)
	default:
		partial = send // alone on the host: mine is every rank, in order
	}

	others := make([]byte, (len(c.hosts)-1)*b) // other hosts' partials, in host order
	var sends, recvs []message
	for k, r := range mine {
		if r != me {
			sends = append(sends, message{peer: r, buf: partial[k*b:][:b]})
		}
	}
	k := 0
	for h := range c.hosts {
		if h != c.host {
			recvs = append(recvs, message{peer: c.partner(h, me), buf: others[k*b:][:b]})
			k++
		}
	}
	if b > 0 {
		done := c.timeInter()
		c.beginAway()
		err := exchange(ctx, c.ep, tag, sends, recvs)
		c.endAway(err)
		done()
		if err != nil {
			return fmt.Errorf("phase 2 (partials across hosts): %w", err)
		}
	}

	own := partial[slices.Index(mine, me)*b:][:b]
	if args.SameMemory(own, recv) && c.host >= 2 {
		own = slices.Clone(own) // recv is written before this host's turn
	}
	in := func(h int) []byte {
		switch {
		case h == c.host:
			return own
		case h < c.host:
			return others[h*b:][:b]
		default:
			return others[(h-1)*b:][:b]
		}
	}
	reduceInOrder(dt, later, recv, len(c.hosts), in)
	if op == reduce.Avg {
		reduce.DivideBy(dt, recv, p)
	}
	return nil
}

// reduceInOrder writes in(0) op in(1) op ... op in(k-1) into dst; dst may
// be exactly in(0) or in(1), never a later input.
func reduceInOrder(dt reduce.DType, op reduce.Op, dst []byte, k int, in func(i int) []byte) {
	if k == 1 {
		args.CopyUnlessSame(dst, in(0))
		return
	}
	reduce.Reduce3(dt, op, dst, in(0), in(1))
	for i := 2; i < k; i++ {
		reduce.Reduce(dt, op, dst, in(i))
	}
}
