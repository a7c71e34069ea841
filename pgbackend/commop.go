package pgbackend

import (
	"context"
	"time"

	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport"
)

// commOp is one op of the communicator on its way through a stream (a
// streams.Op): what it is, its flight recorder entry, what runs, and its
// context. It is the op's one allocation in this package: the context is
// part of it, and it describes itself only when an error needs it.
type commOp struct {
	c    *Communicator
	id   uint64 // its flight recorder entry
	desc opDesc
	// body does the op's work; tag names its messages.
	body func(ctx context.Context, tag transport.Tag) error
	ctx  opContext // set up when it starts (runOp)
}

// newCommOp makes the op and records it, issued now, in the flight
// recorder; the caller queues it with that time.
func (c *Communicator) newCommOp(op opDesc, body func(ctx context.Context, tag transport.Tag) error) (o *commOp, issued time.Time) {
	issued = c.clock.Now()
	o = &commOp{c: c, desc: op, body: body}
	o.id = c.flight.add(op, issued)
	return o, issued
}

// Desc is the op as errors name it.
func (o *commOp) Desc() string { return o.desc.name(o.c.rank, o.c.size) }

// Run runs the op (runOp) when its stream starts it.
func (o *commOp) Run(stamps *streams.Stamps) error { return o.c.runOp(o, stamps) }

// isP2P reports whether the op is a send or a receive.
func (o *commOp) isP2P() bool { return o.desc.isP2P() }

// run does the op's work in its context. A collective first compares its
// fingerprint with the other ranks' under HCCL_GO_CHECK (check.go), and is
// counted in the traffic stats once it runs.
func (o *commOp) run() error {
	if o.isP2P() {
		return o.body(&o.ctx, p2pTag(o.desc.Tag))
	}
	if o.c.cfg.Check {
		// The exchange is not the op's traffic: its messages are counted
		// by their tag.
		if err := o.c.checkCollective(context.WithValue(&o.ctx, trafficKey{}, nil), o.desc); err != nil {
			return err
		}
	}
	o.ctx.traffic.calls.Add(1)
	return o.body(&o.ctx, transport.Tag(o.desc.Seq))
}
