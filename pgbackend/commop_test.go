package pgbackend

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
)

// The flight recorder keeps the op's own clock readings, the ones its Work
// reports: one reading each of issue, start and end.
func TestFlightTimesAreTheOpsReadings(t *testing.T) {
	cs := newComms(t, 1, testConfig())
	c := cs[0]
	for _, inline := range []bool{true, false} {
		buf := f32(1, 2)
		before := time.Now()
		w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
		require.NoError(t, err)
		if inline {
			require.True(t, w.RunInline())
		}
		require.NoError(t, w.Wait(context.Background(), 10*time.Second))
		entries, _ := c.flight.snapshot()
		e := entries[len(entries)-1]
		started, finished := w.Times()
		assert.Equal(t, started, e.started, "inline %v", inline)
		assert.Equal(t, finished, e.ended, "inline %v", inline)
		assert.False(t, e.enqueued.Before(before) || e.started.Before(e.enqueued) || e.ended.Before(e.started),
			"inline %v: enqueued %v, started %v, ended %v", inline, e.enqueued, e.started, e.ended)
		// Wall readings, for dumps: close to time.Now's.
		assert.InDelta(t, before.UnixNano(), e.enqueued.UnixNano(), float64(time.Second))
	}
}

// An op's messages are charged to its kind; the HCCL_GO_CHECK exchange
// before it is not (it counts as "other"), and point-to-point as "p2p".
func TestTrafficChargedToTheOp(t *testing.T) {
	traffic := func(check bool) Stats {
		cfg := testConfig()
		cfg.Check = check
		cs := newComms(t, 2, cfg)
		eachRank(cs, func(c *Communicator) {
			buf := f32(1, 2, 3, 4)
			w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
			wait(t, w, err)
		})
		eachRank(cs, func(c *Communicator) {
			var w *streams.Work
			var err error
			if c.Rank() == 0 {
				w, err = c.Send(f32(1), 1, 7)
			} else {
				w, err = c.Recv(make([]byte, 4), 0, 7)
			}
			wait(t, w, err)
		})
		return cs[0].Stats()
	}
	plain, checked := traffic(false), traffic(true)
	assert.EqualValues(t, 1, plain.Ops["allreduce"].Calls)
	assert.Positive(t, plain.Ops["allreduce"].BytesSent)
	assert.Equal(t, plain.Ops["allreduce"], checked.Ops["allreduce"], "the check is not the op's traffic")
	assert.Zero(t, plain.Ops["other"].BytesSent)
	assert.Positive(t, checked.Ops["other"].BytesSent, "the check's exchange")
	assert.EqualValues(t, 4, plain.Ops["p2p"].BytesSent)
}
