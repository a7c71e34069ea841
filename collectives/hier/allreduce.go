package hier

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// AllReduce reduces send over every rank into recv on every rank (same
// length, whole elements; in place when they are the same memory). With
// n elements, R_h ranks on host h and H hosts:
//
//  1. intra: host h splits the n elements into R_h contiguous pieces and
//     reduce-scatters them in its arena (intra.ReduceScatterV), local rank
//     i getting piece i reduced over the host, into its place in recv;
//  2. inter: the pieces of all hosts are cut at every host's piece
//     boundaries into segments; each segment lies in one piece per host,
//     and its owners (one rank per host) all_reduce it across hosts
//     (collectives.AllReduce over a view of them, in host order). A rank
//     carries every segment of its piece, all at once, and every rank of
//     every host carries one piece at the same time: with equal hosts the
//     segments are the pieces, R_h all_reduces of n/R_h each;
//  3. intra: each host all-gathers its pieces in its arena
//     (intra.AllGatherV), in place in recv.
//
// With o.RoundBytes, a large buffer goes through the phases in rounds
// (see rounds.go), so that the arena phases of one round overlap the
// inter-host phase of another.
//
// Bytes per rank of host h: in the arena those of a reduce-scatter and an
// all-gather of n among R_h (intra/ALGORITHMS.md); across hosts a ring
// all_reduce of its n/R_h among H ranks, 2(H-1)/H·n/R_h sent; each host
// sends 2(H-1)/H·n across in all, as a flat ring that crosses each host
// boundary once would send 2(p-1)/p·n per rank. Avg sums in every phase
// and divides once, PreMulSum scales in phase 1.
func (c *Comm) AllReduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, o collectives.Options) error {
	return c.wrapOp("allreduce", c.allReduce(ctx, tag, send, recv, dt, op, preMul, collectives.NoCompression, o))
}

// AllReduceCompressed is AllReduce whose inter-host phase travels as
// 16-bit floats (collectives.AllReduceCompressed among every segment's
// owners, float32 accumulation), while the arena phases stay exact: each
// host's partial sum is exact in float32 before it is first rounded, and
// only the bytes between hosts shrink. Every rank ends bitwise identical
// (each segment's owners hold the same bits after phase 2, and phase 3
// copies them). Error: each host partial is rounded at most H times on
// its way, so |result - exact| <= H·u·Σ_ranks |x| (u = comp.UnitRoundoff()),
// plus float32 rounding. Avg divides the decoded float32 sum.
//
// dt must be Float32 and op Sum, Avg or PreMulSum
// (collectives.Compressible); comp NoCompression runs AllReduce.
func (c *Comm) AllReduceCompressed(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, comp collectives.Compression, o collectives.Options) error {
	name := "allreduce"
	if comp != collectives.NoCompression && comp != "" {
		name += " " + string(comp)
	}
	return c.wrapOp(name, c.allReduce(ctx, tag, send, recv, dt, op, preMul, comp, o))
}

// allReduceOp is one all_reduce: its arguments and the phases of a round.
type allReduceOp struct {
	c          *Comm
	tag        transport.Tag
	send, recv []byte
	dt         reduce.DType
	op         reduce.Op
	first      reduce.Op // phase 1's op (reduce.Phases)
	later      reduce.Op // phase 2's
	preMul     float64
	comp       collectives.Compression
	across     collectives.Options
}

func (c *Comm) allReduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, comp collectives.Compression, o collectives.Options) error {
	c.last = Times{}
	if err := checkAllReduce(send, recv, dt, op); err != nil {
		return err
	}
	if err := checkCompression(dt, op, comp); err != nil {
		return err
	}
	a := &allReduceOp{c: c, tag: tag, send: send, recv: recv, dt: dt, op: op, preMul: preMul, comp: comp,
		across: collectives.Options{ChunkBytes: o.ChunkBytes}}
	a.first, a.later = reduce.Phases(op)
	return a.pipelined(ctx, c.rounds(len(send)/dt.Size(), dt.Size(), o.RoundBytes))
}

// scatter is phase 1 of round r: this rank's piece of the round, reduced
// over its host, into its place in recv.
func (a *allReduceOp) scatter(ctx context.Context, r round) error {
	c, es := a.c, a.dt.Size()
	mine := r.piece(a.recv, c.local, es)
	if c.inHost == nil {
		localReduce(a.dt, a.first, a.preMul, mine, r.piece(a.send, c.local, es))
		return nil
	}
	defer c.timeArena()()
	if err := c.inHost.ReduceScatterV(ctx, a.tag, r.of(a.send, es), mine, r.counts(1), a.dt, a.first, a.preMul); err != nil {
		return fmt.Errorf("phase 1 (reduce-scatter in host %d): %w", c.host, err)
	}
	return nil
}

// crossHosts is phase 2 of round r: this rank's piece all_reduced across
// hosts (divided for Avg).
func (a *allReduceOp) crossHosts(ctx context.Context, r round) error {
	c, es := a.c, a.dt.Size()
	defer c.timeInter()()
	c.beginAway()
	err := c.allReduceSegments(ctx, a.tag, a.recv, r, a.dt, a.later, a.comp, a.across)
	c.endAway(err)
	if err != nil {
		return fmt.Errorf("phase 2 (all_reduce across hosts): %w", err)
	}
	if a.op == reduce.Avg {
		reduce.DivideBy(a.dt, r.piece(a.recv, c.local, es), c.Size())
	}
	return nil
}

// gather is phase 3 of round r: the host's pieces of the round, in place
// in recv on every local rank.
func (a *allReduceOp) gather(ctx context.Context, r round) error {
	c, es := a.c, a.dt.Size()
	if c.inHost == nil {
		return nil
	}
	defer c.timeArena()()
	if err := c.inHost.AllGatherV(ctx, a.tag, r.piece(a.recv, c.local, es), r.of(a.recv, es), r.counts(es)); err != nil {
		return fmt.Errorf("phase 3 (all-gather in host %d): %w", c.host, err)
	}
	return nil
}

// allReduceSegments all_reduces, across hosts, every segment of this
// rank's piece of round r in buf, each with its owners, all at once,
// compressed unless comp is NoCompression.
func (c *Comm) allReduceSegments(ctx context.Context, tag transport.Tag, buf []byte, r round, dt reduce.DType, op reduce.Op, comp collectives.Compression, o collectives.Options) error {
	lo, hi := r.bounds[c.local], r.bounds[c.local+1]
	if len(c.hosts) == 1 || lo == hi {
		return nil
	}
	es := dt.Size()
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range c.segments(r.hi - r.lo) {
		s.lo, s.hi = s.lo+r.lo, s.hi+r.lo
		if s.lo < lo || s.hi > hi {
			continue
		}
		v, err := sub.New(c.ep, s.owners, s.space)
		if err != nil {
			return err
		}
		seg := buf[s.lo*es : s.hi*es]
		g.Go(func() error {
			if err := collectives.AllReduceCompressed(gctx, v, tag, seg, seg, dt, op, comp, o); err != nil {
				return fmt.Errorf("elements [%d, %d) with ranks %v: %w", s.lo, s.hi, s.owners, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func checkAllReduce(send, recv []byte, dt reduce.DType, op reduce.Op) error {
	return args.CheckAllReduce(send, recv, dt, op)
}

// checkCompression accepts NoCompression for any reduction, and a wire
// format only for what collectives.AllReduceCompressed takes.
func checkCompression(dt reduce.DType, op reduce.Op, comp collectives.Compression) error {
	if comp == collectives.NoCompression || comp == "" {
		return nil
	}
	if _, err := collectives.ParseCompression(string(comp)); err != nil {
		return args.Invalidf("%v", err)
	}
	if !collectives.Compressible(dt, op) {
		return args.Invalidf("compressed all_reduce needs float32 data and op sum, avg or premul_sum, got %s %s", dt, op)
	}
	return nil
}

// localReduce is the reduction over a host of one rank: its input (scaled
// for PreMulSum).
func localReduce(dt reduce.DType, op reduce.Op, preMul float64, dst, src []byte) {
	if op == reduce.PreMulSum {
		reduce.Scale(dt, dst, src, preMul)
		return
	}
	args.CopyUnlessSame(dst, src)
}
