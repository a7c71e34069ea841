package hier

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/transport"
)

// AllGather concatenates every rank's send (b bytes), in rank order, into
// recv on every rank: len(recv) == size·b; in place when send is exactly
// the caller's own block of recv.
//
//  1. inter: every rank sends its block straight to one rank of every
//     other host (host h's ranks take the other hosts' ranks in turn), all
//     at once;
//  2. intra: each host all-gathers, in its arena, the blocks its ranks
//     hold (their own and those they received), laid out local rank after
//     local rank, and every rank copies them to their places in recv. A
//     rank alone on its host receives straight into recv.
//
// Host h sends (H-1)·R_h·b bytes across and receives (p-R_h)·b, the least
// any algorithm moves; each of its ranks sends b to every other host and
// receives about (p-R_h)/R_h blocks. In the arena: an all-gather of p·b
// bytes among R_h ranks, plus a local copy of p·b into place.
func (c *Comm) AllGather(ctx context.Context, tag transport.Tag, send, recv []byte) error {
	return wrapOp("allgather", c.Rank(), c.allGather(ctx, tag, send, recv))
}

func (c *Comm) allGather(ctx context.Context, tag transport.Tag, send, recv []byte) error {
	c.last = Times{}
	me, p, b := c.Rank(), c.Size(), len(send)
	if err := args.CheckLen("recv", recv, p*b); err != nil {
		return err
	}
	if err := args.CheckAliasAt(send, recv, recv[me*b:][:b]); err != nil {
		return err
	}
	// Where the blocks this rank holds go: straight into recv when alone
	// on the host, else into the arena phase's layout.
	held := recv
	at := func(r int) int { return r }
	if c.arena != nil {
		held = make([]byte, p*b)
		at = func(r int) int { return c.packedAt[r] }
	}
	args.CopyUnlessSame(held[at(me)*b:][:b], send)
	if b > 0 {
		var sends, recvs []message
		for h := range c.hosts {
			if h != c.host {
				sends = append(sends, message{peer: c.partner(h, me), buf: send})
			}
		}
		for _, r := range c.blocks[c.local] {
			if r != me {
				recvs = append(recvs, message{peer: r, buf: held[at(r)*b:][:b]})
			}
		}
		done := c.timeInter()
		err := exchange(ctx, c.ep, tag, sends, recvs)
		done()
		if err != nil {
			return fmt.Errorf("phase 1 (blocks across hosts): %w", err)
		}
	}
	if c.arena == nil {
		return nil
	}
	counts := make([]int, len(c.blocks))
	for i, ranks := range c.blocks {
		counts[i] = len(ranks) * b
	}
	mine := held[at(c.blocks[c.local][0])*b:][:counts[c.local]]
	defer c.timeArena()()
	if err := intra.AllGatherV(ctx, c.arena, uint64(tag), mine, held, counts); err != nil {
		return fmt.Errorf("phase 2 (all-gather in host %d): %w", c.host, err)
	}
	for r := range p {
		if r != me {
			copy(recv[r*b:][:b], held[at(r)*b:][:b])
		}
	}
	args.CopyUnlessSame(recv[me*b:][:b], send)
	return nil
}
