package collectives

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/hccl-go/hccl-go/transport"
)

// Point-to-point helpers for the non-pipelined algorithms. They name the
// peer in errors; the transport's *transport.PeerError stays wrapped.

// concurrentExchangeBytes is the size from which exchange overlaps its send
// with its receive in two goroutines. Below it a goroutine hand-off costs
// more than it saves: a Send never waits for the peer's Recv, so sending
// first and then receiving cannot deadlock.
const concurrentExchangeBytes = 64 << 10

func sendTo(ctx context.Context, ep transport.Endpoint, tag transport.Tag, peer int, buf []byte) error {
	if err := ep.Send(ctx, peer, tag, buf); err != nil {
		return fmt.Errorf("send to rank %d: %w", peer, err)
	}
	return nil
}

func recvFrom(ctx context.Context, ep transport.Endpoint, tag transport.Tag, peer int, buf []byte) error {
	if err := ep.Recv(ctx, peer, tag, buf); err != nil {
		return fmt.Errorf("recv from rank %d: %w", peer, err)
	}
	return nil
}

// exchange sends out to rank to and receives in from rank from (to and
// from may be the same rank). A zero-length out or in is not exchanged
// when skipEmpty is set: both sides must then agree on the lengths.
func exchange(ctx context.Context, ep transport.Endpoint, tag transport.Tag, to int, out []byte, from int, in []byte, skipEmpty bool) error {
	doSend := len(out) > 0 || !skipEmpty
	doRecv := len(in) > 0 || !skipEmpty
	if !doSend || !doRecv || len(out)+len(in) < concurrentExchangeBytes {
		if doSend {
			if err := sendTo(ctx, ep, tag, to, out); err != nil {
				return err
			}
		}
		if doRecv {
			return recvFrom(ctx, ep, tag, from, in)
		}
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return sendTo(gctx, ep, tag, to, out) })
	g.Go(func() error { return recvFrom(gctx, ep, tag, from, in) })
	return g.Wait()
}
