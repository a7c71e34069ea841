package pgbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// newComms builds size communicators over in-process links.
func newComms(t *testing.T, size int, cfg Config) []*Communicator {
	t.Helper()
	eps := inproc.NewGroup(size)
	cs := make([]*Communicator, size)
	for i, ep := range eps {
		cs[i] = New(ep, cfg, nil)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			_ = c.Destroy()
		}
	})
	return cs
}

func testConfig() Config {
	c := DefaultConfig()
	c.Timeout = 10 * time.Second
	return c
}

func f32(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func wait(t *testing.T, w *streams.Work, err error) {
	t.Helper()
	require.NoError(t, err)
	require.NoError(t, w.Wait(context.Background(), 20*time.Second))
}

// eachRank runs fn concurrently for every rank and waits for all.
func eachRank(cs []*Communicator, fn func(c *Communicator)) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); fn(c) }()
	}
	wg.Wait()
}

func TestAllReduceThroughCommunicator(t *testing.T) {
	cs := newComms(t, 3, testConfig())
	out := make([][]byte, 3)
	eachRank(cs, func(c *Communicator) {
		r := float32(c.Rank())
		buf := f32(r, 2*r, 1)
		w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
		wait(t, w, err)
		out[c.Rank()] = buf
	})
	for _, b := range out {
		assert.Equal(t, f32(3, 6, 3), b)
	}
	assert.EqualValues(t, 1, cs[0].SequenceNumber())
}

func TestInvalidArgumentsNeverRun(t *testing.T) {
	cs := newComms(t, 2, testConfig())
	c := cs[0]
	buf := f32(1, 2)
	tests := []struct {
		name string
		call func() (*streams.Work, error)
		want string
	}{
		{"bitwise on float", func() (*streams.Work, error) { return c.AllReduce(buf, buf, reduce.Float32, reduce.Bxor, 0, 0) }, "bxor"},
		{"unknown dtype", func() (*streams.Work, error) { return c.AllReduce(buf, buf, reduce.DType(77), reduce.Sum, 0, 0) }, "dtype"},
		{"size mismatch", func() (*streams.Work, error) { return c.AllReduce(buf, buf[:4], reduce.Float32, reduce.Sum, 0, 0) }, "bytes"},
		{"partial element", func() (*streams.Work, error) { return c.AllReduce(buf[:3], buf[:3], reduce.Float32, reduce.Sum, 0, 0) }, "whole number"},
		{"root out of range", func() (*streams.Work, error) { return c.Broadcast(buf, buf, 2, 0) }, "root 2"},
		{"allgather size", func() (*streams.Work, error) { return c.AllGather(buf, buf, 0) }, "recv has"},
		{"bad stream", func() (*streams.Work, error) { return c.Barrier(9) }, "stream 9"},
		{"send to self", func() (*streams.Work, error) { return c.Send(buf, 0, 1) }, "this rank"},
		{"recv from nowhere", func() (*streams.Work, error) { return c.Recv(buf, 5, 1) }, "peer 5"},
		{"alltoall block outside", func() (*streams.Work, error) {
			return c.AllToAllV(buf, []int{4, 8}, []int{0, 4}, buf, []int{4, 4}, []int{0, 4}, 0)
		}, "outside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := tc.call()
			assert.Nil(t, w)
			require.ErrorIs(t, err, ErrInvalidArgument)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, ClassInvalidArgument, Classify(err))
		})
	}
	assert.EqualValues(t, 0, c.SequenceNumber(), "rejected ops must not consume sequence numbers")
}

// Point-to-point ops posted in any order, as batch_isend_irecv does, must
// not deadlock, and must not wait behind a blocked collective.
func TestPointToPointAnyOrder(t *testing.T) {
	cs := newComms(t, 2, testConfig())
	// A collective that can never finish (rank 1 never joins) occupies the
	// default stream of rank 0.
	stuck, err := cs[0].AllReduce(f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault)
	require.NoError(t, err)

	got := make([][]byte, 2)
	eachRank(cs, func(c *Communicator) {
		peer := 1 - c.Rank()
		in := make([]byte, 8)
		var ws []*streams.Work
		var w *streams.Work
		var err error
		if c.Rank() == 0 {
			w, err = c.Recv(in, peer, 7)
			ws = append(ws, w)
			require.NoError(t, err)
			w, err = c.Send(f32(10, 11), peer, 7)
		} else {
			w, err = c.Send(f32(20, 21), peer, 7)
			ws = append(ws, w)
			require.NoError(t, err)
			w, err = c.Recv(in, peer, 7)
		}
		require.NoError(t, err)
		ws = append(ws, w)
		for _, w := range ws {
			require.NoError(t, w.Wait(context.Background(), 5*time.Second))
		}
		got[c.Rank()] = in
	})
	assert.Equal(t, f32(20, 21), got[0])
	assert.Equal(t, f32(10, 11), got[1])
	done, _ := stuck.Test()
	assert.False(t, done)
	cs[0].Abort()
	err = stuck.Wait(context.Background(), 5*time.Second)
	require.ErrorIs(t, err, ErrAborted)
	assert.ErrorContains(t, err, "allreduce seq 1")
}

func TestTimeoutNamesTheOp(t *testing.T) {
	cfg := testConfig()
	cfg.Timeout = 200 * time.Millisecond
	cs := newComms(t, 2, cfg)
	start := time.Now()
	w, err := cs[0].AllReduce(f32(1, 2, 3), make([]byte, 12), reduce.Float32, reduce.Sum, 0, StreamDefault)
	require.NoError(t, err)
	err = w.Wait(context.Background(), 5*time.Second)
	require.ErrorIs(t, err, ErrTimeout)
	assert.ErrorContains(t, err, "allreduce seq 1 (12 bytes) on rank 0 of 2")
	assert.Equal(t, ClassTimeout, Classify(err))
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestDestroy(t *testing.T) {
	cs := newComms(t, 2, testConfig())
	eachRank(cs, func(c *Communicator) {
		w, err := c.Barrier(StreamHighPriority)
		wait(t, w, err)
	})
	for _, c := range cs {
		require.NoError(t, c.Destroy())
		_, err := c.Barrier(StreamDefault)
		require.ErrorIs(t, err, ErrDestroyed)
		assert.True(t, errors.Is(c.Destroy(), ErrDestroyed))
	}
}

// A receive from any rank gets each sender's message once and reports its
// sender; it is a point-to-point op (no sequence number), and a timeout
// names it without failing the communicator.
func TestRecvAny(t *testing.T) {
	cs := newComms(t, 3, testConfig())
	eachRank(cs, func(c *Communicator) {
		if c.Rank() == 0 {
			return
		}
		w, err := c.Send(f32(float32(c.Rank())), 0, 4)
		require.NoError(t, err)
		require.NoError(t, w.Wait(context.Background(), 5*time.Second))
	})
	seen := map[int]float32{}
	for range 2 {
		buf := make([]byte, 4)
		src := -1
		w, err := cs[0].RecvAny(buf, 4, func(r int) { src = r })
		require.NoError(t, err)
		require.NoError(t, w.Wait(context.Background(), 5*time.Second))
		seen[src] = math.Float32frombits(binary.LittleEndian.Uint32(buf))
	}
	assert.Equal(t, map[int]float32{1: 1, 2: 2}, seen)
	assert.EqualValues(t, 0, cs[0].SequenceNumber())

	short := testConfig()
	short.Timeout = 50 * time.Millisecond
	ct := newComms(t, 2, short)
	w, err := ct[0].RecvAny(make([]byte, 4), 9, func(int) { t.Error("nothing was sent") })
	require.NoError(t, err)
	err = w.Wait(context.Background(), 5*time.Second)
	require.ErrorIs(t, err, ErrTimeout)
	assert.ErrorContains(t, err, "recv 4 bytes from any rank tag 9 on rank 0")
	require.NoError(t, ct[0].live(), "a timed-out receive must not fail the communicator")
}
