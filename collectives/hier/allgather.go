package hier

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/internal/args"
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
// With o.RoundBytes, every block is cut into slices, one per round of
// about RoundBytes of recv, and round k's arena phase overlaps round k+1's
// exchange (rounds.go).
//
// Host h sends (H-1)·R_h·b bytes across and receives (p-R_h)·b, the least
// any algorithm moves; each of its ranks sends b to every other host and
// receives about (p-R_h)/R_h blocks. In the arena: an all-gather of p·b
// bytes among R_h ranks, plus a local copy of p·b into place.
func (c *Comm) AllGather(ctx context.Context, tag transport.Tag, send, recv []byte, o collectives.Options) error {
	return c.wrapOp("allgather", c.allGather(ctx, tag, send, recv, o))
}

func (c *Comm) allGather(ctx context.Context, tag transport.Tag, send, recv []byte, o collectives.Options) error {
	c.last = Times{}
	me, p, b := c.Rank(), c.Size(), len(send)
	if err := args.CheckLen("recv", recv, p*b); err != nil {
		return err
	}
	if err := args.CheckAliasAt(send, recv, recv[me*b:][:b]); err != nil {
		return err
	}
	// Round k moves bytes [cuts[k], cuts[k+1]) of every block, on every
	// rank alike (its partners on other hosts cut the same way).
	cuts := pieceBounds(b, gatherRounds(p*b, o.RoundBytes))
	slice := func(k int) (lo, w int) { return cuts[k], cuts[k+1] - cuts[k] }
	if c.inHost == nil {
		// Alone on the host: the slices land in place.
		args.CopyUnlessSame(recv[me*b:][:b], send)
		for k := range len(cuts) - 1 {
			lo, w := slice(k)
			if err := c.gatherExchange(ctx, tag, send[lo:lo+w], func(r int) []byte { return recv[r*b+lo:][:w] }); err != nil {
				return err
			}
		}
		return nil
	}

	// The blocks this rank holds in round k (its own slice and those it
	// receives) sit in held[p·cuts[k]:], laid out as the arena phase
	// gathers them: local index after local index, in the order of
	// c.blocks.
	held := make([]byte, p*b)
	heldOf := func(k, r int) []byte {
		lo, w := slice(k)
		return held[p*lo+c.packedAt[r]*w:][:w]
	}
	return runRounds(ctx, len(cuts)-1, roundStages{
		across: func(ctx context.Context, k int) error {
			lo, w := slice(k)
			copy(heldOf(k, me), send[lo:lo+w])
			return c.gatherExchange(ctx, tag, send[lo:lo+w], func(r int) []byte { return heldOf(k, r) })
		},
		after: func(ctx context.Context, k int) error {
			lo, w := slice(k)
			counts := make([]int, len(c.blocks))
			for i, ranks := range c.blocks {
				counts[i] = len(ranks) * w
			}
			defer c.timeArena()()
			mine := heldOf(k, c.blocks[c.local][0])[:counts[c.local]]
			if err := c.inHost.AllGatherV(ctx, tag, mine, held[p*lo:][:p*w], counts); err != nil {
				return fmt.Errorf("phase 2 (all-gather in host %d): %w", c.host, err)
			}
			for r := range p {
				if r != me {
					copy(recv[r*b+lo:][:w], heldOf(k, r))
				}
			}
			if k == len(cuts)-2 {
				args.CopyUnlessSame(recv[me*b:][:b], send)
			}
			return nil
		},
	})
}

// gatherExchange is phase 1 (of a round): this rank's slice to its
// partner on every other host, and the slices of the ranks it is paired
// with into dst(r), all at once.
func (c *Comm) gatherExchange(ctx context.Context, tag transport.Tag, mine []byte, dst func(r int) []byte) error {
	if len(mine) == 0 {
		return nil
	}
	me := c.Rank()
	var sends, recvs []message
	for h := range c.hosts {
		if h != c.host {
			sends = append(sends, message{peer: c.partner(h, me), buf: mine})
		}
	}
	for _, r := range c.blocks[c.local] {
		if r != me {
			recvs = append(recvs, message{peer: r, buf: dst(r)})
		}
	}
	defer c.timeInter()()
	c.beginAway()
	err := exchange(ctx, c.ep, tag, sends, recvs)
	c.endAway(err)
	if err != nil {
		return fmt.Errorf("phase 1 (blocks across hosts): %w", err)
	}
	return nil
}

// gatherRounds is the number of rounds of an all_gather of total bytes
// (recv): about total/roundBytes, at least one (roundBytes 0: one).
func gatherRounds(total, roundBytes int) int {
	if roundBytes <= 0 {
		return 1
	}
	return max(total/roundBytes, 1)
}
