package collectives

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// Hierarchical collectives: the ranks are split into groups of equal size R
// (hosts, or clusters of fast links), each op works in three phases over
// views (transport/sub) of the communicator, and only one phase crosses
// between groups. Rank Groups[g][i] is "member i of group g"; the ranks
// Groups[0][i], Groups[1][i], ... (one per group, in group order) form the
// i-th cross-group view. ALGORITHMS.md-style descriptions are on each
// function.

// Hier is the algorithm name of the hierarchical collectives (HCCL_GO_ALGO).
const Hier Algorithm = "hier"

// Tag spaces of the phases' views (see transport/sub).
const (
	hierSpaceIntraFirst = 1 // inside each group, before the cross-group phase
	hierSpaceInter      = 2 // across groups
	hierSpaceIntraLast  = 3 // inside each group, after it
)

// Hierarchy splits a communicator's ranks into groups of equal size for the
// hierarchical collectives. Every rank must pass the same Hierarchy.
type Hierarchy struct {
	Groups [][]int
}

// place is where a rank sits in a Hierarchy.
type place struct {
	group, member int
	intra, inter  []int // parent ranks of this rank's group and cross-group view
}

// locate checks that h partitions ranks 0..p-1 into groups of one size and
// returns rank's place.
func (h Hierarchy) locate(p, rank int) (place, error) {
	if len(h.Groups) == 0 {
		return place{}, args.Invalidf("hierarchy without groups")
	}
	r := len(h.Groups[0])
	if r == 0 || r*len(h.Groups) != p {
		return place{}, args.Invalidf("hierarchy of %d groups of %d ranks for %d ranks", len(h.Groups), r, p)
	}
	seen := make([]bool, p)
	pl := place{group: -1}
	for g, grp := range h.Groups {
		if len(grp) != r {
			return place{}, args.Invalidf("hierarchy group %d has %d ranks, group 0 has %d", g, len(grp), r)
		}
		for i, x := range grp {
			if x < 0 || x >= p || seen[x] {
				return place{}, args.Invalidf("hierarchy group %d: rank %d out of range or listed twice", g, x)
			}
			seen[x] = true
			if x == rank {
				pl.group, pl.member = g, i
			}
		}
	}
	pl.intra = h.Groups[pl.group]
	pl.inter = make([]int, len(h.Groups))
	for g, grp := range h.Groups {
		pl.inter[g] = grp[pl.member]
	}
	return pl, nil
}

// views returns the three phase views of ep for pl.
func (pl place) views(ep transport.Endpoint) (first, inter, last transport.Endpoint, err error) {
	if first, err = sub.New(ep, pl.intra, hierSpaceIntraFirst); err != nil {
		return nil, nil, nil, err
	}
	if inter, err = sub.New(ep, pl.inter, hierSpaceInter); err != nil {
		return nil, nil, nil, err
	}
	if last, err = sub.New(ep, pl.intra, hierSpaceIntraLast); err != nil {
		return nil, nil, nil, err
	}
	return first, inter, last, nil
}

// HierAllReduce is all_reduce in three phases:
//
//  1. reduce-scatter inside each group: member i gets shard i (of R shards,
//     split by elements) reduced over its group;
//  2. all_reduce of shard i across groups, over the ranks holding shard i
//     (a ring in group order: the one exchange between groups);
//  3. all-gather of the shards inside each group.
//
// Each rank sends (R-1)/R·n bytes inside its group in phases 1 and 3 each,
// and 2(H-1)/H·n/R across groups (H groups); a group as a whole sends
// 2(H-1)/H·n across, where a flat ring crossing each group boundary once
// sends 2(p-1)/p·n. Results are bitwise identical on every rank.
func HierAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, h Hierarchy, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("hier allreduce", -1, err)
	}
	return wrapOp("hier allreduce", ep.Rank(), hierAllReduce(ctx, ep, tag, send, recv, dt, op, h, o))
}

func hierAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, h Hierarchy, o Options) error {
	if err := checkAllReduce(ep, send, recv, dt, op, Options{ChunkBytes: o.ChunkBytes}); err != nil {
		return err
	}
	pl, err := h.locate(ep.Size(), ep.Rank())
	if err != nil {
		return err
	}
	intra1, inter, intra3, err := pl.views(ep)
	if err != nil {
		return err
	}
	es := dt.Size()
	counts := splitElems(len(send)/es, len(pl.intra))
	off := sum(counts[:pl.member]) * es
	shard := recv[off : off+counts[pl.member]*es]
	first, later := reduce.Phases(op)
	inner := Options{PreMul: o.PreMul, ChunkBytes: o.ChunkBytes}

	if err := ReduceScatterV(ctx, intra1, tag, send, shard, counts, dt, first, inner); err != nil {
		return fmt.Errorf("phase 1 (reduce-scatter in group %d): %w", pl.group, err)
	}
	across := Options{Algo: Ring, ChunkBytes: o.ChunkBytes}
	if err := AllReduce(ctx, inter, tag, shard, shard, dt, later, across); err != nil {
		return fmt.Errorf("phase 2 (all_reduce of shard %d across groups): %w", pl.member, err)
	}
	finishAvg(shard, dt, op, ep.Size())
	byteCounts := make([]int, len(counts))
	for i, c := range counts {
		byteCounts[i] = c * es
	}
	if err := AllGatherV(ctx, intra3, tag, shard, recv, byteCounts, Options{ChunkBytes: o.ChunkBytes}); err != nil {
		return fmt.Errorf("phase 3 (all-gather in group %d): %w", pl.group, err)
	}
	return nil
}

// HierAllGather is all_gather (len(recv) == size·len(send), rank order) in
// two phases and a local copy:
//
//  1. all-gather across groups, over the ranks of this member index: each
//     rank gets the blocks of its counterparts in every group (H blocks);
//  2. all-gather of those H blocks inside each group (R·H blocks);
//  3. a local copy of every block to its rank's place in recv.
//
// A group sends (H-1)/H·n across in all, each rank (H-1) blocks; inside a
// group each rank sends (R-1)/R·n.
func HierAllGather(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, h Hierarchy, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("hier allgather", -1, err)
	}
	return wrapOp("hier allgather", ep.Rank(), hierAllGather(ctx, ep, tag, send, recv, h, o))
}

func hierAllGather(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, h Hierarchy, o Options) error {
	p, b := ep.Size(), len(send)
	if err := args.CheckLen("recv", recv, p*b); err != nil {
		return err
	}
	if err := args.CheckAliasAt(send, recv, recv[ep.Rank()*b:][:b]); err != nil {
		return err
	}
	pl, err := h.locate(p, ep.Rank())
	if err != nil {
		return err
	}
	_, inter, intra, err := pl.views(ep)
	if err != nil {
		return err
	}
	hosts := len(h.Groups)
	mine := make([]byte, hosts*b)
	o = Options{ChunkBytes: o.ChunkBytes}
	if err := AllGather(ctx, inter, tag, send, mine, o); err != nil {
		return fmt.Errorf("phase 1 (all-gather of member %d across groups): %w", pl.member, err)
	}
	packed := make([]byte, p*b) // [member j][group g] = block of rank Groups[g][j]
	if err := AllGather(ctx, intra, tag, mine, packed, o); err != nil {
		return fmt.Errorf("phase 2 (all-gather in group %d): %w", pl.group, err)
	}
	for g, grp := range h.Groups {
		for j, rank := range grp {
			copy(recv[rank*b:][:b], packed[(j*hosts+g)*b:][:b])
		}
	}
	return nil
}

// HierReduceScatter is reduce_scatter (len(send) == size·len(recv), block i
// for rank i) in a local copy and two phases:
//
//  1. a local copy of send into member-major order: the blocks of member
//     j's counterparts (Groups[g][j] for every g) side by side;
//  2. reduce-scatter inside each group: member i gets its H blocks reduced
//     over the group;
//  3. reduce-scatter of those H blocks across groups: rank Groups[g][i]
//     gets its own block reduced over everything.
func HierReduceScatter(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, h Hierarchy, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("hier reducescatter", -1, err)
	}
	return wrapOp("hier reducescatter", ep.Rank(), hierReduceScatter(ctx, ep, tag, send, recv, dt, op, h, o))
}

func hierReduceScatter(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, h Hierarchy, o Options) error {
	p, b := ep.Size(), len(recv)
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := args.CheckElems("recv", recv, dt); err != nil {
		return err
	}
	if err := args.CheckLen("send", send, p*b); err != nil {
		return err
	}
	if err := args.CheckAliasAt(recv, send, send[ep.Rank()*b:][:b]); err != nil {
		return err
	}
	pl, err := h.locate(p, ep.Rank())
	if err != nil {
		return err
	}
	intra, inter, _, err := pl.views(ep)
	if err != nil {
		return err
	}
	hosts := len(h.Groups)
	packed := make([]byte, p*b)
	for g, grp := range h.Groups {
		for j, rank := range grp {
			copy(packed[(j*hosts+g)*b:][:b], send[rank*b:][:b])
		}
	}
	first, later := reduce.Phases(op)
	mine := make([]byte, hosts*b)
	if err := ReduceScatter(ctx, intra, tag, packed, mine, dt, first, Options{PreMul: o.PreMul, ChunkBytes: o.ChunkBytes}); err != nil {
		return fmt.Errorf("phase 1 (reduce-scatter in group %d): %w", pl.group, err)
	}
	if err := ReduceScatter(ctx, inter, tag, mine, recv, dt, later, Options{ChunkBytes: o.ChunkBytes}); err != nil {
		return fmt.Errorf("phase 2 (reduce-scatter of member %d across groups): %w", pl.member, err)
	}
	finishAvg(recv, dt, op, p)
	return nil
}

// HierBroadcast is broadcast in two phases: root's counterparts (the
// ranks of root's member index) get the buffer across groups, then each
// passes it on inside its group. The buffer crosses into each group once.
func HierBroadcast(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, h Hierarchy, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("hier broadcast", -1, err)
	}
	return wrapOp("hier broadcast", ep.Rank(), hierBroadcast(ctx, ep, tag, send, recv, root, h, o))
}

func hierBroadcast(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, h Hierarchy, o Options) error {
	if err := args.CheckRoot(root, ep.Size()); err != nil {
		return err
	}
	pl, err := h.locate(ep.Size(), ep.Rank())
	if err != nil {
		return err
	}
	rootPl, err := h.locate(ep.Size(), root)
	if err != nil {
		return err
	}
	_, inter, intra, err := pl.views(ep)
	if err != nil {
		return err
	}
	o = Options{ChunkBytes: o.ChunkBytes}
	if pl.member == rootPl.member {
		if err := Broadcast(ctx, inter, tag, send, recv, rootPl.group, o); err != nil {
			return fmt.Errorf("phase 1 (broadcast across groups from group %d): %w", rootPl.group, err)
		}
	}
	if err := Broadcast(ctx, intra, tag, recv, recv, rootPl.member, o); err != nil {
		return fmt.Errorf("phase 2 (broadcast in group %d): %w", pl.group, err)
	}
	return nil
}

// splitElems splits n elements into k shards, the first n%k one larger.
func splitElems(n, k int) []int {
	counts := make([]int, k)
	for i := range counts {
		counts[i] = n / k
		if i < n%k {
			counts[i]++
		}
	}
	return counts
}
