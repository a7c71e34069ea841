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

func streamsConfig(n, workers int) Config {
	c := testConfig()
	c.Streams, c.StreamWorkers, c.StreamDefer = n, workers, time.Minute
	return c
}

func allReduceOn(t *testing.T, c *Communicator, stream int) *streams.Work {
	t.Helper()
	buf := f32(float32(c.Rank()), 1)
	w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, stream)
	require.NoError(t, err)
	return w
}

func waitWorks(t *testing.T, ws ...*streams.Work) {
	t.Helper()
	for _, w := range ws {
		require.NoError(t, w.Wait(context.Background(), 20*time.Second), w.Desc())
	}
}

func TestStreamsOrderAndOverlapAcrossRanks(t *testing.T) {
	cs := newComms(t, 2, streamsConfig(3, 0))
	gate := streams.NewWork("gate")
	type result struct{ a1, a2, b *streams.Work }
	res := make([]result, 2)
	eachRank(cs, func(c *Communicator) {
		if c.Rank() == 1 {
			// Rank 1 holds stream 0 back until the gate opens.
			_, err := c.WaitFor(StreamDefault, gate)
			require.NoError(t, err)
		}
		a1 := allReduceOn(t, c, StreamDefault)
		a2 := allReduceOn(t, c, StreamDefault)
		b := allReduceOn(t, c, 2)
		res[c.Rank()] = result{a1, a2, b}
	})
	for _, r := range res {
		waitWorks(t, r.b) // stream 2 completes while stream 0 is held back
		done, _ := r.a1.Test()
		assert.False(t, done, "a1 cannot complete before the gate opens")
	}
	gate.Complete(nil)
	for _, r := range res {
		waitWorks(t, r.a1, r.a2)
		_, a1End := r.a1.Times()
		a2Start, _ := r.a2.Times()
		assert.False(t, a2Start.Before(a1End), "ops of one stream run in order")
	}
}

func TestHighPriorityCollectiveStartsFirst(t *testing.T) {
	// One worker per rank, held by a local op on a spare stream while a
	// default-priority and then a high-priority collective are issued;
	// once the worker frees, the high one starts first, on both ranks.
	cs := newComms(t, 2, streamsConfig(4, 1))
	release := make(chan struct{})
	works := make([][3]*streams.Work, 2)
	for _, c := range cs {
		busy := c.streams[3].Submit("busy", func() error { <-release; return nil })
		require.Eventually(t, func() bool { return c.sched.Running() == 1 }, 10*time.Second, time.Millisecond)
		low := allReduceOn(t, c, StreamDefault)
		high := allReduceOn(t, c, StreamHighPriority)
		works[c.Rank()] = [3]*streams.Work{busy, low, high}
	}
	close(release)
	for r, w := range works {
		waitWorks(t, w[:]...)
		lStart, _ := w[1].Times()
		hStart, hEnd := w[2].Times()
		assert.True(t, hStart.Before(lStart), "rank %d: the high-priority op starts first", r)
		assert.False(t, lStart.Before(hEnd), "rank %d: one worker: the other op starts after the high one", r)
	}
}

func TestStreamConfigAndEvents(t *testing.T) {
	cs := newComms(t, 2, streamsConfig(4, 0))
	assert.Equal(t, 4, cs[0].NumStreams())
	_, err := cs[0].AllReduce(f32(1), f32(1), reduce.Float32, reduce.Sum, 0, 4)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = cs[0].Record(-1)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = cs[0].WaitFor(0, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)

	eachRank(cs, func(c *Communicator) {
		a := allReduceOn(t, c, 3)
		ev, err := c.Record(3)
		require.NoError(t, err)
		marker, err := c.WaitFor(StreamDefault, ev)
		require.NoError(t, err)
		b := allReduceOn(t, c, StreamDefault)
		waitWorks(t, a, ev, marker, b)
		_, aEnd := a.Times()
		bStart, _ := b.Times()
		assert.False(t, bStart.Before(aEnd), "an op after WaitFor starts after the event")
	})

	cfg := DefaultConfig()
	require.NoError(t, cfg.ApplyOptions("streams=3;stream_workers=2;stream_depth=16;stream_defer_ms=2"))
	assert.Equal(t, 3, cfg.Streams)
	assert.Equal(t, 2, cfg.StreamWorkers)
	assert.Equal(t, 16, cfg.StreamDepth)
	assert.Equal(t, 2*time.Millisecond, cfg.StreamDefer)
	require.Error(t, cfg.ApplyOptions("streams=5"))
	require.Error(t, cfg.ApplyOptions("streams=1"))
}

func TestStreamBackPressureHonoursAbort(t *testing.T) {
	cfg := streamsConfig(2, 0)
	cfg.StreamDepth = 2
	cs := newComms(t, 2, cfg)
	// Rank 1 never joins: rank 0's stream fills, the next issue waits
	// for room, and an abort ends the wait.
	allReduceOn(t, cs[0], StreamDefault)
	allReduceOn(t, cs[0], StreamDefault)
	errc := make(chan error, 1)
	go func() {
		_, err := cs[0].AllReduce(f32(1), f32(1), reduce.Float32, reduce.Sum, 0, StreamDefault)
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("issue returned while the stream was full: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	seq := cs[0].SequenceNumber()
	cs[0].Abort()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrAborted)
	case <-time.After(10 * time.Second):
		t.Fatal("abort did not end the wait for room")
	}
	assert.Equal(t, seq, cs[0].SequenceNumber(), "a refused op takes no sequence number")
}
