package pgbackend

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/streams"
)

// Streams of a communicator. Collectives run on HCCL_GO_STREAMS streams of
// one scheduler (streams package): in order within a stream, concurrently
// across streams. Stream StreamHighPriority is granted workers before the
// others when HCCL_GO_STREAM_WORKERS binds; every other stream has normal
// priority. Ranks that share a host have a shared-memory arena per stream
// (an arena runs one op at a time). Point-to-point ops have queues of
// their own (p2p.go), outside the budget.

// MaxStreams is the most collective streams a communicator may have.
const MaxStreams = numStreams

// Stream priorities.
const (
	priorityNormal = 0
	priorityHigh   = 1
)

// newStreams builds the scheduler and the collective streams.
func (c *Communicator) newStreams() {
	c.sched = streams.NewScheduler(fmt.Sprintf("rank%d", c.rank), streams.Config{
		Workers: c.cfg.StreamWorkers, DeferLimit: c.cfg.StreamDefer, Depth: c.cfg.StreamDepth,
		Clock: c.clock, // the ops' readings serve the flight recorder too (commop.go)
	})
	n := min(max(c.cfg.Streams, 2), MaxStreams) // Config{} literals (tests) get 2
	c.streams = make([]*streams.Stream, n)
	for i := range c.streams {
		name, prio := fmt.Sprintf("s%d", i), priorityNormal
		switch i {
		case StreamDefault:
			name = "default"
		case StreamHighPriority:
			name, prio = "high", priorityHigh
		}
		c.streams[i] = c.sched.NewStream(name, prio, 0)
	}
}

// NumStreams is the number of collective streams (HCCL_GO_STREAMS).
func (c *Communicator) NumStreams() int { return len(c.streams) }

// reserve waits for room on collective stream i (back-pressure), at most
// the op timeout and never past an abort or failure.
func (c *Communicator) reserve(stream int) (*streams.Reservation, error) {
	if stream < 0 || stream >= len(c.streams) {
		return nil, fmt.Errorf("rank %d: %w: stream %d out of range [0, %d) (HCCL_GO_STREAMS)", c.rank, ErrInvalidArgument, stream, len(c.streams))
	}
	if r := c.streams[stream].TryReserve(); r != nil {
		return r, nil // room at once: no deadline to make
	}
	ctx, cancel := c.ctx, context.CancelFunc(func() {})
	if c.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
	}
	defer cancel()
	r, err := c.streams[stream].Reserve(ctx)
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", c.rank, err)
	}
	return r, nil
}

// Record returns an event: a Work that completes once every collective
// queued on stream before it has completed (with status nil; the ops
// report their own errors).
func (c *Communicator) Record(stream int) (*streams.Work, error) {
	if err := c.live(); err != nil {
		return nil, err
	}
	r, err := c.reserve(stream)
	if err != nil {
		return nil, err
	}
	return r.Record(fmt.Sprintf("rank%d stream %d", c.rank, stream)), nil
}

// WaitFor makes the collectives queued on stream from now on start after w
// (a Work of any stream, e.g. an event from Record) has completed. The
// returned marker completes with w's status.
func (c *Communicator) WaitFor(stream int, w *streams.Work) (*streams.Work, error) {
	if err := c.live(); err != nil {
		return nil, err
	}
	if w == nil {
		return nil, c.invalid("waitfor", "no work to wait for")
	}
	r, err := c.reserve(stream)
	if err != nil {
		return nil, err
	}
	return r.After(w), nil
}
