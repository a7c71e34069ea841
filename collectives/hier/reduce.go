package hier

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// Reduce reduces send over every rank into recv on root (recv is unused
// elsewhere and may be send itself on root).
//
//  1. intra: each host reduces to its leader (root on its own host,
//     Comm.leaders elsewhere) in its arena;
//  2. inter: the leaders reduce their hosts' partials to root
//     (collectives.Reduce over a view of the leaders in host order: a tree
//     when small, a pipelined chain when large).
//
// With the chain each host's leader sends n bytes across once, root's
// host receives n; in the arena a reduce of n among R_h ranks. Avg sums in
// both phases and divides once, PreMulSum scales in phase 1.
func (c *Comm) Reduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int, o collectives.Options) error {
	return c.wrapOp("reduce", c.reduce(ctx, tag, send, recv, dt, op, preMul, root, o))
}

func (c *Comm) reduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root int, o collectives.Options) error {
	me := c.Rank()
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := args.CheckRoot(root, c.Size()); err != nil {
		return err
	}
	if err := args.CheckElems("send", send, dt); err != nil {
		return err
	}
	if me == root {
		if err := args.CheckLen("recv", recv, len(send)); err != nil {
			return err
		}
		if err := args.CheckAlias(send, recv); err != nil {
			return err
		}
	} else {
		recv = nil
	}
	first, later := reduce.Phases(op)
	leaders, rootAt := c.leaders(root)
	leader := leaders[c.host]
	// partial is the host's partial result, on its leader.
	var partial []byte
	switch {
	case me == root:
		partial = recv
	case me == leader:
		partial = make([]byte, len(send))
	}
	switch {
	case c.inHost != nil:
		if err := c.inHost.Reduce(ctx, tag, send, partial, dt, first, preMul, c.localOf[leader]); err != nil {
			return fmt.Errorf("phase 1 (reduce in host %d to rank %d): %w", c.host, leader, err)
		}
	case first == reduce.PreMulSum:
		reduce.Scale(dt, partial, send, preMul)
	default:
		partial = send // alone on the host
	}
	if me == leader && len(c.hosts) > 1 {
		v, err := sub.New(c.ep, leaders, spaceLeaders)
		if err != nil {
			return err
		}
		c.beginAway()
		err = collectives.Reduce(ctx, v, tag, partial, recv, dt, later, rootAt, collectives.Options{ChunkBytes: o.ChunkBytes})
		c.endAway(err)
		if err != nil {
			return fmt.Errorf("phase 2 (reduce across hosts to rank %d): %w", root, err)
		}
	} else if me == root {
		args.CopyUnlessSame(recv, partial)
	}
	if me == root && op == reduce.Avg {
		reduce.DivideBy(dt, recv, c.Size())
	}
	return nil
}
