package collectives

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// Rings in another order than rank order: the topology (topo.OrderRing)
// puts neighbours on fast links next to each other. Each function runs the
// ordinary algorithm over a view (transport/sub) that renumbers rank
// order[k] as k; results land where rank order puts them. order must be a
// permutation of the ranks, the same on every rank.

// orderedView is the view of ep in order (tag space 0: the view is the
// whole op).
func orderedView(ep transport.Endpoint, order []int) (transport.Endpoint, error) {
	if len(order) != ep.Size() {
		return nil, args.Invalidf("ring order of %d ranks for %d ranks", len(order), ep.Size())
	}
	v, err := sub.New(ep, order, 0)
	if err != nil {
		return nil, args.Invalidf("ring order %v: %v", order, err)
	}
	return v, nil
}

// isIdentity reports whether order is 0, 1, 2, ...
func isIdentity(order []int) bool {
	for i, r := range order {
		if r != i {
			return false
		}
	}
	return true
}

// OrderedAllReduce is AllReduce with the ring (or the pairs of recursive
// doubling and halving-doubling) following order.
func OrderedAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, order []int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("allreduce", -1, err)
	}
	if len(order) == ep.Size() && isIdentity(order) {
		return AllReduce(ctx, ep, tag, send, recv, dt, op, o)
	}
	v, err := orderedView(ep, order)
	if err != nil {
		return wrapOp("allreduce", ep.Rank(), err)
	}
	return AllReduce(ctx, v, tag, send, recv, dt, op, o)
}

// OrderedAllReduceCompressed is AllReduceCompressed with its ring
// following order.
func OrderedAllReduceCompressed(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, c Compression, order []int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("allreduce "+string(c), -1, err)
	}
	if len(order) == ep.Size() && isIdentity(order) {
		return AllReduceCompressed(ctx, ep, tag, send, recv, dt, op, c, o)
	}
	v, err := orderedView(ep, order)
	if err != nil {
		return wrapOp("allreduce "+string(c), ep.Rank(), err)
	}
	return AllReduceCompressed(ctx, v, tag, send, recv, dt, op, c, o)
}

// OrderedBroadcast is Broadcast with the chain (or tree) following order.
func OrderedBroadcast(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, order []int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("broadcast", -1, err)
	}
	v, err := orderedView(ep, order)
	if err != nil {
		return wrapOp("broadcast", ep.Rank(), err)
	}
	if err := args.CheckRoot(root, ep.Size()); err != nil {
		return wrapOp("broadcast", ep.Rank(), err)
	}
	if isIdentity(order) {
		return Broadcast(ctx, ep, tag, send, recv, root, o)
	}
	return Broadcast(ctx, v, tag, send, recv, indexOf(order, root), o)
}

// OrderedAllGather is AllGather with the ring following order. Unless
// order is rank order, blocks arrive in ring order in a scratch buffer and
// are copied to their places (one local copy of the output).
func OrderedAllGather(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, order []int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("allgather", -1, err)
	}
	v, err := orderedView(ep, order)
	if err != nil {
		return wrapOp("allgather", ep.Rank(), err)
	}
	p, b := ep.Size(), len(send)
	if isIdentity(order) {
		return AllGather(ctx, ep, tag, send, recv, o)
	}
	if err := args.CheckLen("recv", recv, p*b); err != nil {
		return wrapOp("allgather", ep.Rank(), err)
	}
	if err := args.CheckAliasAt(send, recv, recv[ep.Rank()*b:][:b]); err != nil {
		return wrapOp("allgather", ep.Rank(), err)
	}
	scratch := make([]byte, p*b)
	if err := AllGather(ctx, v, tag, send, scratch, o); err != nil {
		return err
	}
	for k, rank := range order {
		copy(recv[rank*b:][:b], scratch[k*b:][:b])
	}
	return nil
}

// OrderedReduceScatter is ReduceScatter with the ring following order.
// Unless order is rank order, the input is first copied into ring order.
func OrderedReduceScatter(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, order []int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("reducescatter", -1, err)
	}
	v, err := orderedView(ep, order)
	if err != nil {
		return wrapOp("reducescatter", ep.Rank(), err)
	}
	if isIdentity(order) {
		return ReduceScatter(ctx, ep, tag, send, recv, dt, op, o)
	}
	p, b := ep.Size(), len(recv)
	if err := args.CheckLen("send", send, p*b); err != nil {
		return wrapOp("reducescatter", ep.Rank(), err)
	}
	if err := args.CheckAliasAt(recv, send, send[ep.Rank()*b:][:b]); err != nil {
		return wrapOp("reducescatter", ep.Rank(), err)
	}
	packed := make([]byte, p*b)
	for k, rank := range order {
		copy(packed[k*b:][:b], send[rank*b:][:b])
	}
	return ReduceScatter(ctx, v, tag, packed, recv, dt, op, o)
}

func indexOf(xs []int, x int) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
