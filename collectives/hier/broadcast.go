package hier

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// Broadcast copies root's send into recv on every rank (send is read on
// root only and may be recv itself).
//
//  1. inter: one leader per host (root on its own, Comm.leaders elsewhere)
//     broadcast across hosts (collectives.Broadcast over a view of the
//     leaders in host order: a tree when small, a pipelined chain when
//     large);
//  2. intra: each leader broadcasts in its host's arena. On root's host
//     this runs at the same time as phase 1.
//
// With the chain each host receives n bytes across once and sends n on,
// root's host sends n; in the arena a broadcast of n among R_h ranks.
func (c *Comm) Broadcast(ctx context.Context, tag transport.Tag, send, recv []byte, root int, o collectives.Options) error {
	return c.wrapOp("broadcast", c.broadcast(ctx, tag, send, recv, root, o))
}

func (c *Comm) broadcast(ctx context.Context, tag transport.Tag, send, recv []byte, root int, o collectives.Options) error {
	me := c.Rank()
	if err := args.CheckRoot(root, c.Size()); err != nil {
		return err
	}
	if me == root {
		if err := args.CheckLen("send", send, len(recv)); err != nil {
			return err
		}
		if err := args.CheckAlias(send, recv); err != nil {
			return err
		}
		// Both phases then read recv, at the same time.
		args.CopyUnlessSame(recv, send)
	}
	leaders, rootAt := c.leaders(root)
	leader := leaders[c.host]
	across := func(ctx context.Context) error {
		if me != leader || len(c.hosts) == 1 {
			return nil
		}
		v, err := sub.New(c.ep, leaders, spaceLeaders)
		if err != nil {
			return err
		}
		c.beginAway()
		err = collectives.Broadcast(ctx, v, tag, recv, recv, rootAt, collectives.Options{ChunkBytes: o.ChunkBytes})
		c.endAway(err)
		if err != nil {
			return fmt.Errorf("phase 1 (broadcast across hosts from rank %d): %w", root, err)
		}
		return nil
	}
	inside := func(ctx context.Context) error {
		if c.inHost == nil {
			return nil
		}
		if err := c.inHost.Broadcast(ctx, tag, recv, recv, c.localOf[leader]); err != nil {
			return fmt.Errorf("phase 2 (broadcast in host %d from rank %d): %w", c.host, leader, err)
		}
		return nil
	}
	if me != root {
		if err := across(ctx); err != nil {
			return err
		}
		return inside(ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return across(gctx) })
	g.Go(func() error { return inside(gctx) })
	return g.Wait()
}
