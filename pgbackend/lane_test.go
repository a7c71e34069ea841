package pgbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
)

// laneInput is rank's n random elements of dt (finite floats, near 1 for
// Prod; any bits for integers; bools 0..2).
func laneInput(dt reduce.DType, op reduce.Op, n, rank int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(rank)+1))
	es := dt.Size()
	buf := make([]byte, n*es)
	for i := range n {
		b := buf[i*es : (i+1)*es]
		x := 2*rng.Float64() - 1
		if op == reduce.Prod {
			x = 1 + x/8
		}
		var f [4]byte
		binary.NativeEndian.PutUint32(f[:], math.Float32bits(float32(x)))
		switch dt {
		case reduce.Bool:
			b[0] = byte(rng.IntN(3))
		case reduce.Float32:
			copy(b, f[:])
		case reduce.Float64:
			binary.NativeEndian.PutUint64(b, math.Float64bits(x))
		case reduce.Float16:
			reduce.Float32ToFloat16(b, f[:])
		case reduce.BFloat16:
			reduce.Float32ToBFloat16(b, f[:])
		default:
			var r [8]byte
			binary.NativeEndian.PutUint64(r[:], rng.Uint64())
			copy(b, r[:])
		}
	}
	return buf
}

// laneReference reduces inputs in rank order, as every route must: scaled
// by preMul for PreMulSum, divided for Avg.
func laneReference(dt reduce.DType, op reduce.Op, preMul float64, inputs [][]byte) []byte {
	in := func(j int) []byte {
		if op != reduce.PreMulSum {
			return inputs[j]
		}
		s := make([]byte, len(inputs[j]))
		reduce.Scale(dt, s, inputs[j], preMul)
		return s
	}
	out := append([]byte(nil), in(0)...)
	for j := 1; j < len(inputs); j++ {
		reduce.Reduce(dt, op, out, in(j))
	}
	if op == reduce.Avg {
		reduce.DivideBy(dt, out, len(inputs))
	}
	return out
}

// allReduceNow runs an all_reduce at once on the calling thread (RunNow)
// when it may; ran false: it did nothing.
func allReduceNow(c *Communicator, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stream int) (ran bool, err error) {
	return c.RunNow(c.AllReduceCall(send, recv, dt, op, preMul, stream))
}

// laneAllReduce runs an all_reduce in the fast lane, failing the test if
// the lane keeps refusing it. It tries again for a moment: a stream whose
// last op a worker ran stays busy until the worker has finished with it,
// a little after the op's waiter has returned.
func laneAllReduce(t *testing.T, c *Communicator, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stream int) error {
	t.Helper()
	for deadline := time.Now().Add(time.Second); ; {
		ran, err := allReduceNow(c, send, recv, dt, op, preMul, stream)
		if ran {
			return err
		}
		require.True(t, time.Now().Before(deadline), "rank %d: the fast lane refused the op", c.Rank())
		time.Sleep(10 * time.Microsecond) // poll interval
	}
}

// Ranks in the fast lane and ranks that queue the op meet and give the
// reference's result, bit for bit, for every dtype and op and for sizes
// 0, 1, odd, a full inline slot, the next size (a data half) and the
// lane's limit.
func TestFastLaneResultsMatchReference(t *testing.T) {
	const preMul = 0.375
	cs := connectAll(t, []string{"h", "h", "h"}, testConfig())
	inline, limit := cs[0].arenas[StreamDefault].InlineBytes(), cs[0].laneLimit(StreamDefault)
	for _, dt := range reduce.AllDTypes {
		for _, op := range reduce.AllOps {
			if reduce.Check(dt, op) != nil {
				continue
			}
			for _, n := range []int{0, 1, 7, inline / dt.Size(), inline/dt.Size() + 1, limit / dt.Size()} {
				lanes := uint(n+int(dt)+int(op))%7 + 1 // which ranks take the lane: varies, at least one
				inputs := make([][]byte, len(cs))
				for r := range cs {
					inputs[r] = laneInput(dt, op, n, r, uint64(n)*131+uint64(dt)*17+uint64(op))
				}
				want := laneReference(dt, op, preMul, inputs)
				outs := make([][]byte, len(cs))
				eachRank(cs, func(c *Communicator) {
					r := c.Rank()
					send := append([]byte(nil), inputs[r]...)
					recv := send
					if n%2 == 1 {
						recv = make([]byte, len(send))
					}
					outs[r] = recv
					if lanes&(1<<r) != 0 {
						assert.NoError(t, laneAllReduce(t, c, send, recv, dt, op, preMul, StreamDefault))
						return
					}
					w, err := c.AllReduce(send, recv, dt, op, preMul, StreamDefault)
					wait(t, w, err)
				})
				for r := range cs {
					require.Equal(t, want, outs[r], "%v %v n=%d lanes=%03b rank %d", dt, op, n, lanes, r)
				}
			}
		}
	}
}

func TestFastLaneRefusesWhatItCannotRun(t *testing.T) {
	oneHost := []string{"h", "h"}
	noLane, check, algo, workers := testConfig(), testConfig(), testConfig(), testConfig()
	noLane.FastLane = false
	check.Check = true
	algo.Algo = map[string]collectives.Algorithm{"allreduce": collectives.Ring}
	workers.StreamWorkers = 1
	tcpOnly := testConfig()
	tcpOnly.Transport = "tcp"
	small := func() ([]byte, []byte) { return make([]byte, 8), make([]byte, 8) }
	tests := []struct {
		name  string
		hosts []string
		cfg   Config
		call  func(c *Communicator) (bool, error)
	}{
		{"HCCL_GO_FAST_LANE=0", oneHost, noLane, nil},
		{"HCCL_GO_CHECK", oneHost, check, nil},
		{"algorithm forced", oneHost, algo, nil},
		{"worker budget", oneHost, workers, nil},
		{"no arena", oneHost, tcpOnly, nil},
		{"two hosts", []string{"a", "b"}, testConfig(), nil},
		{"bad stream", oneHost, testConfig(), func(c *Communicator) (bool, error) {
			s, r := small()
			return allReduceNow(c, s, r, reduce.Float32, reduce.Sum, 0, 7)
		}},
		{"bad op", oneHost, testConfig(), func(c *Communicator) (bool, error) {
			s, r := small()
			return allReduceNow(c, s, r, reduce.Float32, reduce.Bxor, 0, StreamDefault)
		}},
		{"partial overlap", oneHost, testConfig(), func(c *Communicator) (bool, error) {
			b := make([]byte, 12)
			return allReduceNow(c, b[:8], b[4:], reduce.Float32, reduce.Sum, 0, StreamDefault)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := connectAll(t, tc.hosts, tc.cfg)
			call := tc.call
			if call == nil {
				call = func(c *Communicator) (bool, error) {
					s, r := small()
					return allReduceNow(c, s, r, reduce.Float32, reduce.Sum, 0, StreamDefault)
				}
			}
			ran, err := call(cs[0])
			assert.False(t, ran)
			assert.NoError(t, err)
			assert.Zero(t, cs[0].SequenceNumber(), "a refused op must not take a sequence number")
		})
	}
}

// An op queued before the lane is tried keeps the lane away (it would
// overtake it); one queued while the lane runs starts after it.
func TestFastLaneKeepsStreamOrder(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, testConfig())
	issue := func(c *Communicator) *streams.Work {
		w, err := c.AllReduce(f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault)
		require.NoError(t, err)
		return w
	}
	// Rank 1 has seq 1 queued (rank 0 has not issued it yet): its stream is
	// busy, so its next blocking op must not take the lane.
	first := issue(cs[1])
	ran, _ := allReduceNow(cs[1], f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault)
	require.False(t, ran, "the lane overtook a queued op")
	waitAll := func(ws ...*streams.Work) {
		for _, w := range ws {
			require.NoError(t, w.Wait(context.Background(), 5*time.Second))
		}
	}
	waitAll(issue(cs[0]), first)

	// Rank 0 runs seq 2 in the lane and, while it waits for rank 1, queues
	// seq 3: seq 3 must start after seq 2 has ended.
	laneErr := make(chan error, 1)
	go func() {
		// The stream may still be finishing seq 1's bookkeeping after its
		// Work completed; the lane then refuses (taking no sequence
		// number), so try again until it runs.
		deadline := time.Now().Add(5 * time.Second)
		for {
			ran, err := allReduceNow(cs[0], f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault)
			if ran || err != nil || time.Now().After(deadline) {
				if !ran && err == nil {
					err = errors.New("the lane refused seq 2 for 5 s on an idle stream")
				}
				laneErr <- err
				return
			}
			time.Sleep(50 * time.Microsecond) // poll interval
		}
	}()
	require.Eventually(t, func() bool { return cs[0].streams[StreamDefault].Held() }, 5*time.Second, 100*time.Microsecond)
	third := issue(cs[0])
	require.Never(t, func() bool { done, _ := third.Test(); return done }, 20*time.Millisecond, time.Millisecond,
		"an op queued behind the lane ran before it")
	waitAll(issue(cs[1]), issue(cs[1])) // rank 1 joins seq 2 and 3
	require.NoError(t, <-laneErr)
	waitAll(third)
	started, _ := third.Times()
	entries, _ := cs[0].flight.snapshot()
	require.Len(t, entries, 3)
	lane := entries[1]
	require.Equal(t, "arena", lane.op.Route)
	require.EqualValues(t, 2, lane.op.Seq)
	assert.False(t, started.Before(lane.ended), "seq 3 started before the lane's seq 2 ended")
}

// A lane op is recorded like a queued one: route "arena", its sequence
// number, done, and the stream's progress; it counts as an all_reduce.
func TestFastLaneFlightRecordAndStats(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, testConfig())
	eachRank(cs, func(c *Communicator) {
		assert.NoError(t, laneAllReduce(t, c, f32(1, 2), make([]byte, 8), reduce.Float32, reduce.Avg, 0, StreamHighPriority))
	})
	entries, total := cs[0].flight.snapshot()
	require.EqualValues(t, 1, total)
	e := entries[0]
	assert.Equal(t, "allreduce", e.op.Kind)
	assert.Equal(t, "arena", e.op.Route)
	assert.EqualValues(t, 1, e.op.Seq)
	assert.Equal(t, 8, e.op.Bytes)
	assert.Equal(t, reduce.Avg, e.op.RedOp)
	assert.Equal(t, StreamHighPriority, e.op.Stream)
	assert.Equal(t, stateDone, e.state)
	assert.False(t, e.started.Before(e.enqueued) || e.ended.Before(e.started))
	p := cs[0].flight.streams()[StreamHighPriority]
	assert.EqualValues(t, 1, p.ended)
	assert.EqualValues(t, 1, cs[0].Stats().Ops["allreduce"].Calls)
}

func TestFastLaneMismatchFailsAlikeAndKeepsComm(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, testConfig())
	errs := make([]error, 2)
	eachRank(cs, func(c *Communicator) {
		n := 8 * (c.Rank() + 1)
		if c.Rank() == 0 {
			errs[0] = laneAllReduce(t, c, make([]byte, n), make([]byte, n), reduce.Float32, reduce.Sum, 0, StreamDefault)
			return
		}
		w, err := c.AllReduce(make([]byte, n), make([]byte, n), reduce.Float32, reduce.Sum, 0, StreamDefault)
		require.NoError(t, err)
		errs[1] = w.Wait(context.Background(), 5*time.Second)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, intra.ErrMismatch, "rank %d", r)
		assert.ErrorContains(t, err, "ranks called different collectives")
		assert.Equal(t, ClassInvalidUsage, Classify(err), "rank %d", r)
	}
	entries, _ := cs[0].flight.snapshot()
	assert.Equal(t, stateFailed, entries[0].state)
	assert.Contains(t, entries[0].err, "ranks called different collectives")
	eachRank(cs, func(c *Communicator) {
		assert.NoError(t, laneAllReduce(t, c, f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault))
	})
}

func TestFastLaneTimesOutNamingTheRank(t *testing.T) {
	cs := connectAll(t, []string{"h", "h", "h"}, reliabilityConfig(t, 300*time.Millisecond))
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			errs[r] = laneAllReduce(t, cs[r], f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault)
		})
	}
	wg.Wait()
	assert.Less(t, time.Since(start), 3*time.Second)
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.ErrorContains(t, err, "allreduce seq 1 (4 bytes)", "rank %d", r)
		assert.ErrorContains(t, err, "rank 2 has not issued it", "rank %d", r)
	}
	ran, _ := allReduceNow(cs[0], f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault)
	assert.False(t, ran, "a failed communicator must not take the lane")
}

// A peer whose process goes away while a rank waits in the lane makes the
// op fail at once with an error naming it; Abort meanwhile returns once
// the op has let go of the arena.
func TestFastLanePeerLossAndAbort(t *testing.T) {
	for _, who := range []string{"peer lost", "own abort"} {
		t.Run(who, func(t *testing.T) {
			cs := connectAll(t, []string{"h", "h"}, reliabilityConfig(t, 20*time.Second))
			errc := make(chan error, 1)
			go func() {
				errc <- laneAllReduce(t, cs[0], f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, StreamDefault)
			}()
			require.Eventually(t, func() bool { return cs[0].streams[StreamDefault].Held() }, 5*time.Second, time.Millisecond)
			// Past the spin and the yields: asleep on rank 1's bell.
			require.Eventually(t, func() bool { return asleepOn(cs[0], StreamDefault, 1) }, 5*time.Second, 100*time.Microsecond,
				"rank 0 never went to sleep on rank 1's bell")
			start := time.Now()
			if who == "peer lost" {
				cs[1].Abort() // its links and arena close, as a crash would
			} else {
				cs[0].Abort()
			}
			var err error
			select {
			case err = <-errc:
			case <-time.After(5 * time.Second):
				t.Fatal("the lane op did not end")
			}
			assert.Less(t, time.Since(start), 2*time.Second)
			require.Error(t, err)
			assert.ErrorContains(t, err, "allreduce seq 1")
			if who == "peer lost" {
				assert.ErrorContains(t, err, "peer rank 1")
				assert.Equal(t, ClassRemote, Classify(err), "%v", err)
			} else {
				assert.ErrorIs(t, err, ErrAborted)
			}
			assert.False(t, cs[0].streams[StreamDefault].Held())
		})
	}
}

// Fast-lane ops and queued ops, alternating on two streams, all complete
// with the right sums (run with -race).
func TestFastLaneUnderConcurrentIssue(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, testConfig())
	const rounds = 200
	eachRank(cs, func(c *Communicator) {
		for round := range rounds {
			stream := round % 2
			buf := f32(float32(c.Rank()+1), float32(round))
			if round%3 == 0 {
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, stream)
				wait(t, w, err)
			} else if ran, err := allReduceNow(c, buf, buf, reduce.Float32, reduce.Sum, 0, stream); !ran {
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, stream)
				wait(t, w, err)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, f32(3, float32(2*round)), buf, fmt.Sprintf("rank %d round %d", c.Rank(), round))
		}
	})
}

// asleepOn reports whether a goroutine of c sleeps on local rank j's bell
// in the arena of stream: the waiters word of j's segment is non-zero.
func asleepOn(c *Communicator, stream, j int) bool {
	addr := c.arenas[stream].Raw().Waiters[j]
	// The word lies in a shared mapping, outside the Go heap: reading the
	// address as a pointer is safe.
	w := (*atomic.Uint32)(*(*unsafe.Pointer)(unsafe.Pointer(&addr)))
	return w.Load() != 0
}
