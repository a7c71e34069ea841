package collectives

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/hccl-go/hccl-go/transport"
)

// An actionPipeline is the schedule of a compressed ring: like pipeline (see
// pipeline.go), a queue of sends and a queue of receives with the same two
// kinds of dependency, but each item may carry an action: a send's runs
// just before the send (it encodes the chunk), a receive's just after the
// message has landed (it decodes and accumulates it). Sends' actions run on
// the sending goroutine, receives' on the receiving one, so each side uses
// its own scratch memory.
type actionPipeline struct {
	ep   transport.Endpoint
	tag  transport.Tag
	name string

	// window: send i waits for receive i-window too (0: no limit).
	window       int
	sends, recvs []pipeItem
}

type pipeItem struct {
	peer, step int
	buf        []byte
	// after: for a send, the receives that must have completed first; for
	// a receive, the sends.
	after  int
	action func()
}

// compressWindowBytes bounds how far, in wire bytes, a sender runs ahead
// of its own receives (as ringWindow does for the uncompressed ring): what
// the receiving peer may have to buffer. It is large enough that a link of
// 1 Gbit/s stays busy through a 30 ms stall of the receiving goroutine
// (decoding takes CPU; on a loaded host a goroutine waits for it), and at
// least 4 chunks.
const compressWindowBytes = 4 << 20

// compressWindow is the send window in chunks of chunkBytes wire bytes.
func compressWindow(chunkBytes int) int {
	return max(4, compressWindowBytes/max(chunkBytes, 1))
}

// compressConcurrentBytes is the schedule size (bytes received) from which
// the two queues run in their own goroutines.
const compressConcurrentBytes = 32 << 10

func (pl *actionPipeline) addSend(it pipeItem) {
	if pl.window > 0 {
		it.after = max(it.after, len(pl.sends)-pl.window)
	}
	pl.sends = append(pl.sends, it)
}

func (pl *actionPipeline) addRecv(it pipeItem) { pl.recvs = append(pl.recvs, it) }

func (pl *actionPipeline) run(ctx context.Context) error {
	bytes := 0
	for _, it := range pl.recvs {
		bytes += len(it.buf)
	}
	if bytes < compressConcurrentBytes || len(pl.sends) == 0 || len(pl.recvs) == 0 {
		return pl.runSequential(ctx)
	}
	return pl.runConcurrent(ctx)
}

func (pl *actionPipeline) send(ctx context.Context, it *pipeItem) error {
	if it.action != nil {
		it.action()
	}
	if err := pl.ep.Send(ctx, it.peer, pl.tag, it.buf); err != nil {
		return fmt.Errorf("%s step %d: send to rank %d: %w", pl.name, it.step, it.peer, err)
	}
	return nil
}

func (pl *actionPipeline) recv(ctx context.Context, it *pipeItem) error {
	if err := pl.ep.Recv(ctx, it.peer, pl.tag, it.buf); err != nil {
		return fmt.Errorf("%s step %d: recv from rank %d: %w", pl.name, it.step, it.peer, err)
	}
	if it.action != nil {
		it.action()
	}
	return nil
}

// runSequential alternates: every send whose receives are done, then the
// next receive.
func (pl *actionPipeline) runSequential(ctx context.Context) error {
	si, ri := 0, 0
	for si < len(pl.sends) || ri < len(pl.recvs) {
		for si < len(pl.sends) && pl.sends[si].after <= ri {
			if err := pl.send(ctx, &pl.sends[si]); err != nil {
				return err
			}
			si++
		}
		if ri == len(pl.recvs) {
			if si < len(pl.sends) {
				return errStuck
			}
			break
		}
		if pl.recvs[ri].after > si {
			return errStuck
		}
		if err := pl.recv(ctx, &pl.recvs[ri]); err != nil {
			return err
		}
		ri++
	}
	return nil
}

func (pl *actionPipeline) runConcurrent(ctx context.Context) error {
	var sent, received progress
	sent.init()
	received.init()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for i := range pl.sends {
			if err := received.wait(gctx, pl.sends[i].after); err != nil {
				return err
			}
			if err := pl.send(gctx, &pl.sends[i]); err != nil {
				return err
			}
			sent.advance()
		}
		return nil
	})
	g.Go(func() error {
		for i := range pl.recvs {
			if err := sent.wait(gctx, pl.recvs[i].after); err != nil {
				return err
			}
			if err := pl.recv(gctx, &pl.recvs[i]); err != nil {
				return err
			}
			received.advance()
		}
		return nil
	})
	return g.Wait()
}
