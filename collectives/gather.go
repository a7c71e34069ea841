package collectives

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport"
)

// Gather concatenates every rank's send, in rank order, into recv on root:
// len(recv) == size*len(send), recv is written on root only (in place,
// send may be exactly root's own block of recv). Algorithm: Direct.
//
// Direct: every rank sends its block to root, which receives them in rank
// order. Root receives (p-1)·n bytes, every other rank sends n. A send
// never waits for its receive, so the transport takes in all blocks
// concurrently while root copies them out in order.
func Gather(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("gather", -1, err)
	}
	return wrapOp("gather", ep.Rank(), gather(ctx, ep, tag, send, recv, root, o))
}

func gather(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, o Options) error {
	p, r, n := ep.Size(), ep.Rank(), len(send)
	if err := checkRooted(ctx, o, root, p, r, "recv", recv, send); err != nil {
		return err
	}
	if r != root {
		if n == 0 {
			return nil
		}
		return sendTo(ctx, ep, tag, root, send)
	}
	args.CopyUnlessSame(recv[r*n:(r+1)*n], send)
	for i := 0; i < p && n > 0; i++ {
		if i == root {
			continue
		}
		if err := recvFrom(ctx, ep, tag, i, recv[i*n:(i+1)*n]); err != nil {
			return err
		}
	}
	return nil
}

// Scatter sends block i of root's send to rank i's recv:
// len(send) == size*len(recv) on root (send is read on root only; in
// place, recv may be exactly root's own block of send). Algorithm: Direct.
//
// Direct: root sends each rank its block, in rank order; root sends
// (p-1)·n bytes, every other rank receives n.
func Scatter(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("scatter", -1, err)
	}
	return wrapOp("scatter", ep.Rank(), scatter(ctx, ep, tag, send, recv, root, o))
}

func scatter(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, root int, o Options) error {
	p, r, n := ep.Size(), ep.Rank(), len(recv)
	if err := checkRooted(ctx, o, root, p, r, "send", send, recv); err != nil {
		return err
	}
	if r != root {
		if n == 0 {
			return nil
		}
		return recvFrom(ctx, ep, tag, root, recv)
	}
	for i := 0; i < p && n > 0; i++ {
		if i == root {
			continue
		}
		if err := sendTo(ctx, ep, tag, i, send[i*n:(i+1)*n]); err != nil {
			return err
		}
	}
	args.CopyUnlessSame(recv, send[r*n:(r+1)*n])
	return nil
}

// checkRooted validates a Direct rooted collective: the options, the root
// and, on root, whole (named name) holding p blocks of len(own), own
// aliasing whole only as root's own block.
func checkRooted(ctx context.Context, o Options, root, p, r int, name string, whole, own []byte) error {
	if err := checkOptions(o, Direct); err != nil {
		return err
	}
	if err := args.CheckRoot(root, p); err != nil {
		return err
	}
	if r == root {
		n := len(own)
		if err := args.CheckLen(name, whole, p*n); err != nil {
			return err
		}
		if err := args.CheckAliasAt(own, whole, whole[r*n:(r+1)*n]); err != nil {
			return err
		}
	}
	return ctx.Err()
}
