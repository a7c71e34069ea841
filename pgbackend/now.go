package pgbackend

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport"
)

// A Call is one collective whose arguments were checked, ready to be
// queued on its stream (Submit) or run at once on the calling thread
// (RunNow). The ops' *Call methods make them; the ops themselves are
// Submit(XCall(...)).
type Call struct {
	stream int
	desc   opDesc
	body   func(ctx context.Context, tag transport.Tag) error
}

// Submit queues call on its stream (submitCollective); err is the error
// the call was made with, returned as is.
func (c *Communicator) Submit(call Call, err error) (*streams.Work, error) {
	if err != nil {
		return nil, err
	}
	return c.submitCollective(call.stream, call.desc, call.body)
}

// RunNow runs call to completion right here, for a caller that would wait
// for it at once, when it may: the same conditions as the all_reduce fast
// lane (lane.go: the settings allow it, the communicator has not failed)
// and the op runs in the arena of all the communicator's ranks, or in
// place on symmetric memory (symmetric.go), on a stream that is idle. It holds the stream, takes the next sequence
// number, records itself as running, runs the op's body and concludes it
// as the queued path does (same tag, deadline, errors, flight record and
// traffic count), with no Work and no hand-over to a scheduler thread.
// ran false: it did nothing (nor does it report err, the error the call
// was made with); the caller then Submits the call.
func (c *Communicator) RunNow(call Call, err error) (ran bool, _ error) {
	s := call.stream
	symmetric := call.desc.Algo == algoSymm
	if err != nil || s < 0 || s >= len(c.streams) || !c.laneOn() || c.lane.off.Load() != 0 ||
		(c.arenaFor(s, collectives.Options{Algo: call.desc.Algo}) == nil && !symmetric) {
		return false, nil
	}
	seq, held := c.holdIdle(s)
	if !held {
		return false, nil
	}
	defer c.streams[s].Release()
	d := call.desc
	d.Seq, d.Stream, d.Route = seq, s, "arena"
	if symmetric {
		d.Route = "symmetric"
	}
	start := c.clock.Now()
	id := c.flight.addRunning(d, start)
	var ctx opContext
	ctx.init(c.ctx, start.Add(c.cfg.Timeout), c.stats.call(d.Kind))
	defer ctx.release()
	_, err = c.concludeOp(id, d, start, &ctx, call.body(&ctx, transport.Tag(seq)))
	return true, err
}
