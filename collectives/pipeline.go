package collectives

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// A pipeline is the schedule of one rank in a ring or chain algorithm: a
// queue of sends and a queue of receives, each posted in order. An item
// may carry work of its own (a send's prepare encodes its chunk, a
// receive's then decodes and accumulates it: the compressed ring), run on
// its queue's goroutine, so each side uses its own scratch memory. Large
// schedules run the two queues in two goroutines, so that the send of one
// chunk overlaps the receive and reduction of the next; small ones run in
// the calling goroutine (a goroutine hand-off would cost more than it
// saves). Either way two dependencies keep it correct:
//
//   - a send waits until the first `after` receives have completed: it
//     forwards data those receives produced;
//   - a receive waits until the first `after` sends have completed: it
//     overwrites memory those sends read (a reused scratch slot, or a block
//     of an in-place buffer).
//
// A builder must order the dependencies so that the sequential run (all
// eligible sends, then one receive, repeat) always makes progress.
type pipeline struct {
	ep   transport.Endpoint
	tag  transport.Tag
	name string // names the algorithm in errors, e.g. "ring"

	dt      reduce.DType
	op      reduce.Op
	divisor int // Avg: receives marked divide finish with DivideBy(divisor)

	sends []sendItem
	recvs []recvItem

	// window, when positive, also holds send i back until receive
	// i-window has completed (see sendAfter). Ring schedules set it: there
	// a rank's receive i is its left neighbour's send i, so the window
	// bounds how far a sender runs ahead of its neighbours (at step 0 it
	// could otherwise push its whole block at once, all of it buffered by
	// the transport as unexpected messages), and receives tend to be
	// posted before their data arrives, which then lands in place. It
	// cannot deadlock: a rank stuck on its window has received less than
	// its left neighbour will send, so that neighbour is stuck too, and
	// around the ring each would be more than window sends ahead of its
	// left neighbour, which is impossible.
	window int

	// concurrentBytes is the schedule size (bytes received) from which the
	// two queues run in their own goroutines (0: pipelineMinBytes).
	concurrentBytes int
}

type sendItem struct {
	peer, step int
	buf        []byte
	after      int    // receives that must have completed first
	prepare    func() // when set, runs just before the send (it fills buf)
}

type recvItem struct {
	peer, step int
	buf        []byte // where the message lands
	after      int    // sends that must have completed first
	// When into is set, the landed message is reduced:
	// into = buf op with (withFirst: with op buf), then into /= divisor
	// if divide.
	into, with []byte
	withFirst  bool
	divide     bool
	// then, when set, runs once the message has landed (and been reduced).
	then func()
}

// ringWindow is the send window of ring all_reduce and all_gather, in
// chunks. (Not of reduce_scatter: there the receiver stalls once its slots
// are full until the sends of step 0 are all out, so a window could
// deadlock.)
const ringWindow = 4

// pipelineMinBytes is the schedule size (bytes received) from which the two
// queues run in their own goroutines.
const pipelineMinBytes = 64 << 10

func (pl *pipeline) addSend(peer, step int, buf []byte, after int) {
	pl.addSendItem(sendItem{peer: peer, step: step, buf: buf, after: after})
}

func (pl *pipeline) addSendItem(it sendItem) { pl.sends = append(pl.sends, it) }

// sendAfter is the number of receives that must have completed before
// send i: its own dependency, and the window. The window never asks for
// more receives than there are: with uneven blocks a rank may send more
// messages than it receives, and its last sends must not wait forever.
func (pl *pipeline) sendAfter(i int) int {
	after := pl.sends[i].after
	if pl.window > 0 {
		after = max(after, min(i-pl.window, len(pl.recvs)))
	}
	return after
}

func (pl *pipeline) addRecv(it recvItem) {
	pl.recvs = append(pl.recvs, it)
}

func (pl *pipeline) run(ctx context.Context) error {
	bytes := 0
	for _, it := range pl.recvs {
		bytes += len(it.buf)
	}
	threshold := pl.concurrentBytes
	if threshold == 0 {
		threshold = pipelineMinBytes
	}
	if bytes < threshold || len(pl.sends) == 0 || len(pl.recvs) == 0 {
		return pl.runSequential(ctx)
	}
	return pl.runConcurrent(ctx)
}

func (pl *pipeline) send(ctx context.Context, it *sendItem) error {
	if it.prepare != nil {
		it.prepare()
	}
	if err := pl.ep.Send(ctx, it.peer, pl.tag, it.buf); err != nil {
		return fmt.Errorf("%s step %d: send to rank %d: %w", pl.name, it.step, it.peer, err)
	}
	return nil
}

func (pl *pipeline) recv(ctx context.Context, it *recvItem) error {
	if err := pl.ep.Recv(ctx, it.peer, pl.tag, it.buf); err != nil {
		return fmt.Errorf("%s step %d: recv from rank %d: %w", pl.name, it.step, it.peer, err)
	}
	if it.into != nil {
		a, b := it.buf, it.with
		if it.withFirst {
			a, b = b, a
		}
		reduce.Reduce3(pl.dt, pl.op, it.into, a, b)
		if it.divide {
			reduce.DivideBy(pl.dt, it.into, pl.divisor)
		}
	}
	if it.then != nil {
		it.then()
	}
	return nil
}

var errStuck = errors.New("internal error: pipeline schedule cannot make progress")

func (pl *pipeline) runSequential(ctx context.Context) error {
	si, ri := 0, 0
	for si < len(pl.sends) || ri < len(pl.recvs) {
		for si < len(pl.sends) && pl.sendAfter(si) <= ri {
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

func (pl *pipeline) runConcurrent(ctx context.Context) error {
	var sent, received progress
	sent.init()
	received.init()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for i := range pl.sends {
			if err := received.wait(gctx, pl.sendAfter(i)); err != nil {
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

// progress counts the completed items of one queue; the other queue's
// goroutine waits on it. The bell (capacity 1) wakes a waiter without ever
// blocking the goroutine that advances.
type progress struct {
	done atomic.Int64
	bell chan struct{}
}

func (p *progress) init() { p.bell = make(chan struct{}, 1) }

func (p *progress) advance() {
	p.done.Add(1)
	select {
	case p.bell <- struct{}{}:
	default:
	}
}

func (p *progress) wait(ctx context.Context, n int) error {
	for p.done.Load() < int64(n) {
		select {
		case <-p.bell:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
