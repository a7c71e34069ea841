package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
)

// reliabilityConfig is testConfig with dumps kept out of $TMPDIR.
func reliabilityConfig(t *testing.T, timeout time.Duration) Config {
	cfg := testConfig()
	cfg.Timeout = timeout
	cfg.TraceDir = t.TempDir()
	return cfg
}

// reliabilityRoute is a route a single-host or multi-host job can take.
type reliabilityRoute struct {
	name  string
	hosts []string
	tcp   bool // HCCL_GO_TRANSPORT=tcp
	hier  bool // hierarchical all_reduce (across the hosts: arena inside them)
	lazy  bool // HCCL_GO_LAZY_LINKS=1
}

var reliabilityRoutes = []reliabilityRoute{
	{name: "arena", hosts: []string{"h", "h", "h", "h"}},
	{name: "tcp", hosts: []string{"h", "h", "h", "h"}, tcp: true},
	{name: "hier+arena", hosts: []string{"a", "a", "b", "b"}, hier: true},
	{name: "lazy links", hosts: []string{"a", "b", "c", "d"}, lazy: true},
	{name: "lazy links, hier+arena", hosts: []string{"a", "a", "b", "b"}, hier: true, lazy: true},
}

func routeConfig(t *testing.T, timeout time.Duration, route reliabilityRoute) Config {
	cfg := reliabilityConfig(t, timeout)
	if route.tcp {
		cfg.Transport = "tcp"
	}
	if route.lazy {
		cfg.LazyLinks = "1"
	}
	if route.hier {
		cfg.TopoProbe = "0"
		cfg.Algo = map[string]collectives.Algorithm{"allreduce": collectives.Hier}
	}
	return cfg
}

// waitAll waits for every work and returns their errors.
func waitAll(ws []*streams.Work, limit time.Duration) []error {
	errs := make([]error, len(ws))
	for i, w := range ws {
		errs[i] = w.Wait(context.Background(), limit)
	}
	return errs
}

// A rank that leaves without destroying its communicator (as a killed
// process does: its sockets close, no goodbye from its monitor) fails every
// abortLastRankMidOp starts an all_reduce of elems float32 on both streams
// of every rank but the last, aborts the last once they all run (its links
// close abruptly, as a crash would), and returns each survivor's errors,
// having checked that every op failed fast naming the lost peer.
func abortLastRankMidOp(t *testing.T, cs []*Communicator, elems int) [][]error {
	t.Helper()
	last := len(cs) - 1
	pending := make([][]*streams.Work, last)
	for r := range last {
		for _, s := range []int{StreamDefault, StreamHighPriority} {
			buf := f32s(1, elems)
			w, err := cs[r].AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, s)
			require.NoError(t, err)
			pending[r] = append(pending[r], w)
		}
	}
	require.Eventually(t, func() bool {
		for r := range pending {
			for _, w := range pending[r] {
				if started, _ := w.Times(); started.IsZero() {
					return false
				}
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "the ops never started")
	start := time.Now()
	cs[last].Abort()
	out := make([][]error, last)
	for r := range last {
		out[r] = waitAll(pending[r], 5*time.Second)
		for i, err := range out[r] {
			require.Error(t, err, "rank %d op %d", r, i)
			assert.ErrorContains(t, err, fmt.Sprintf("peer rank %d", last), "rank %d", r)
			assert.Equal(t, ClassRemote, Classify(err), "rank %d: %v", r, err)
		}
	}
	assert.Less(t, time.Since(start), 2*time.Second, "survivors must fail fast")
	return out
}

// pending and later op of every other rank at once, naming it.
func TestPeerLossFailsEveryOp(t *testing.T) {
	for _, route := range reliabilityRoutes {
		t.Run(route.name, func(t *testing.T) {
			cs := connectAll(t, route.hosts, routeConfig(t, 20*time.Second, route))
			for r, errs := range abortLastRankMidOp(t, cs, 4) {
				for i, err := range errs {
					assert.ErrorContains(t, err, "allreduce seq", "rank %d op %d", r, i)
				}
			}
			// Later ops fail before they start, naming the lost peer too.
			w, err := cs[0].Barrier(StreamDefault)
			require.NoError(t, err)
			err = w.Wait(context.Background(), time.Second)
			require.ErrorIs(t, err, ErrCommFailed)
			assert.ErrorContains(t, err, "barrier seq 3")
			assert.ErrorContains(t, err, "peer rank 3")
		})
	}
}

// A rank that never joins a collective makes it time out on the others,
// with an error naming the op, the rank not arrived and the time waited;
// the late rank learns of it at once.
func TestTimeoutNamesRanksNotArrived(t *testing.T) {
	for _, route := range reliabilityRoutes {
		t.Run(route.name, func(t *testing.T) {
			cs := connectAll(t, route.hosts, routeConfig(t, 500*time.Millisecond, route))
			eachRank(cs, func(c *Communicator) {
				w, err := c.Barrier(StreamDefault)
				wait(t, w, err)
			})
			var ws []*streams.Work
			for _, r := range []int{0, 1, 3} {
				w, err := cs[r].AllReduce(f32(1, 2), make([]byte, 8), reduce.Float32, reduce.Sum, 0, StreamDefault)
				require.NoError(t, err)
				ws = append(ws, w)
			}
			for i, err := range waitAll(ws, 5*time.Second) {
				require.Error(t, err)
				var notice *PeerFailure
				if !errors.Is(err, ErrTimeout) {
					// A faster rank's notice may end this one first: it
					// carries the same explanation.
					require.ErrorAs(t, err, &notice, "op %d", i)
				}
				assert.ErrorContains(t, err, "allreduce seq 2 (8 bytes)")
				assert.ErrorContains(t, err, "waiting for ranks [2]")
				assert.ErrorContains(t, err, "rank 2 has not issued it (last issued seq 1)")
			}
			// Rank 2 is told: its late op fails without waiting.
			require.Eventually(t, func() bool { return cs[2].failure() != nil }, 5*time.Second, time.Millisecond,
				"rank 2 was never told of the timeout")
			start := time.Now()
			w, err := cs[2].AllReduce(f32(1, 2), make([]byte, 8), reduce.Float32, reduce.Sum, 0, StreamDefault)
			require.NoError(t, err)
			err = w.Wait(context.Background(), 5*time.Second)
			require.ErrorIs(t, err, ErrCommFailed)
			assert.ErrorContains(t, err, "timed out")
			assert.Less(t, time.Since(start), 300*time.Millisecond)
		})
	}
}

// With HCCL_GO_CHECK every rank of a mismatched collective fails alike,
// naming the fields that differ, and the communicator stays usable.
func TestMismatchCheck(t *testing.T) {
	type call func(c *Communicator) (*streams.Work, error)
	allReduce := func(n int, dt reduce.DType, op reduce.Op) call {
		return func(c *Communicator) (*streams.Work, error) {
			buf := make([]byte, n*dt.Size())
			return c.AllReduce(buf, buf, dt, op, 0, StreamDefault)
		}
	}
	broadcast := func(n, root int) call {
		return func(c *Communicator) (*streams.Work, error) {
			buf := make([]byte, n)
			return c.Broadcast(buf, buf, root, StreamDefault)
		}
	}
	tests := []struct {
		name     string
		odd      call // issued by rank 1; the others issue even
		even     call
		wantDiff string
	}{
		{"size", allReduce(8, reduce.Float32, reduce.Sum), allReduce(4, reduce.Float32, reduce.Sum),
			"bytes: 16 on ranks [0 2 3], 32 on ranks [1]"},
		{"dtype", allReduce(4, reduce.Float64, reduce.Sum), allReduce(8, reduce.Float32, reduce.Sum),
			"dtype: float32 on ranks [0 2 3], float64 on ranks [1]"},
		{"reduce op", allReduce(4, reduce.Float32, reduce.Max), allReduce(4, reduce.Float32, reduce.Sum),
			"reduce op: sum on ranks [0 2 3], max on ranks [1]"},
		{"op", broadcast(16, 0), allReduce(4, reduce.Float32, reduce.Sum),
			"op: allreduce on ranks [0 2 3], broadcast on ranks [1]"},
		{"root", broadcast(16, 1), broadcast(16, 0),
			"root: 0 on ranks [0 2 3], 1 on ranks [1]"},
	}
	for _, route := range reliabilityRoutes {
		t.Run(route.name, func(t *testing.T) {
			cfg := routeConfig(t, 5*time.Second, route)
			cfg.Check = true
			cs := connectAll(t, route.hosts, cfg)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					errs := make([]error, len(cs))
					eachRank(cs, func(c *Communicator) {
						issue := tc.even
						if c.Rank() == 1 {
							issue = tc.odd
						}
						w, err := issue(c)
						require.NoError(t, err)
						errs[c.Rank()] = w.Wait(context.Background(), 5*time.Second)
					})
					for r, err := range errs {
						require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
						assert.ErrorContains(t, err, tc.wantDiff, "rank %d", r)
						assert.Equal(t, ClassInvalidUsage, Classify(err))
					}
					// The ranks are still in step.
					eachRank(cs, func(c *Communicator) {
						buf := f32(1)
						w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
						wait(t, w, err)
						assert.Equal(t, f32(4), buf)
					})
				})
			}
		})
	}
}

// Abort from any goroutine ends every waiter at once: running and queued
// collectives on both streams and pending receives.
func TestAbortUnblocksEveryWaiter(t *testing.T) {
	for _, route := range reliabilityRoutes {
		t.Run(route.name, func(t *testing.T) {
			cs := connectAll(t, route.hosts[:2], routeConfig(t, 30*time.Second, route))
			c := cs[0]
			var ws []*streams.Work
			for i := 0; i < 5; i++ {
				for _, s := range []int{StreamDefault, StreamHighPriority} {
					w, err := c.AllReduce(f32(1), make([]byte, 4), reduce.Float32, reduce.Sum, 0, s)
					require.NoError(t, err)
					ws = append(ws, w)
				}
				w, err := c.Recv(make([]byte, 4), 1, uint32(i))
				require.NoError(t, err)
				ws = append(ws, w)
			}
			// Waiters on other goroutines, as C++ threads would be.
			var wg sync.WaitGroup
			var entering atomic.Int32
			waited := make([]error, len(ws))
			for i, w := range ws {
				wg.Go(func() {
					entering.Add(1)
					waited[i] = w.Wait(context.Background(), 10*time.Second)
				})
			}
			// Every waiter goroutine runs and is at its Wait. One that has
			// not blocked yet when Abort comes finds its work failed with
			// ErrAborted just the same.
			require.Eventually(t, func() bool { return int(entering.Load()) == len(ws) }, 5*time.Second, 100*time.Microsecond)
			start := time.Now()
			go c.Abort()
			wg.Wait()
			elapsed := time.Since(start)
			for i, err := range waited {
				require.ErrorIs(t, err, ErrAborted, "work %d", i)
			}
			assert.Less(t, elapsed, time.Second, "abort must end every wait at once")
			t.Logf("%d waiters ended %v after Abort", len(ws), elapsed)
		})
	}
}

// Destroy is an orderly exit: peers that destroy later see no failure.
func TestDestroyIsNotAFailure(t *testing.T) {
	cs := connectAll(t, []string{"h", "h", "h"}, reliabilityConfig(t, 5*time.Second))
	eachRank(cs, func(c *Communicator) {
		w, err := c.Barrier(StreamDefault)
		wait(t, w, err)
	})
	require.NoError(t, cs[0].Destroy())
	assert.Never(t, func() bool { return cs[1].failure() != nil || cs[2].failure() != nil }, 100*time.Millisecond,
		time.Millisecond, "a peer saw rank 0's destroy as a failure")
}

func TestCompareFingerprints(t *testing.T) {
	fp := func(d opDesc, seq uint64, stream int) []byte {
		d.Seq, d.Stream = seq, stream
		return d.fingerprint()
	}
	ar := reduction("allreduce", 64, reduce.Float32, reduce.Sum, -1)
	tests := []struct {
		name string
		fps  [][]byte
		want string
	}{
		{"agree", [][]byte{fp(ar, 3, 0), fp(ar, 3, 0)}, ""},
		{"seq", [][]byte{fp(ar, 3, 0), fp(ar, 4, 0)}, "seq: 3 on ranks [0], 4 on ranks [1]"},
		{"stream", [][]byte{fp(ar, 3, 0), fp(ar, 3, 1)}, "stream: default on ranks [0], high on ranks [1]"},
		{"kind and dtype", [][]byte{fp(ar, 1, 0), fp(movement("broadcast", 64, 0), 1, 0)},
			"op: allreduce on ranks [0], broadcast on ranks [1]; dtype: float32 on ranks [0], none on ranks [1]; reduce op: sum on ranks [0], none on ranks [1]; root: none on ranks [0], 0 on ranks [1]"},
		{"alltoallv sizes may differ", [][]byte{fp(movement("alltoallv", 8, -1), 1, 0), fp(movement("alltoallv", 16, -1), 1, 0)}, ""},
		{"counts", [][]byte{fp(movement("allgatherv", 8, -1).withCounts([]int{4, 4}), 1, 0), fp(movement("allgatherv", 8, -1).withCounts([]int{2, 6}), 1, 0)}, "counts: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var all []byte
			for _, f := range tc.fps {
				all = append(all, f...)
			}
			got := compareFingerprints(all, len(tc.fps))
			if tc.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tc.want)
			}
		})
	}
}

func TestControlMessageRoundTrip(t *testing.T) {
	m := &ctlMsg{kind: ctlReply, id: 7, issued: 42, text: "why"}
	m.streams[1].started, m.streams[1].ended, m.streams[1].runningMs = 41, 40, 1500
	got, err := decodeCtl(m.encode())
	require.NoError(t, err)
	assert.Equal(t, *m, got)
	_, err = decodeCtl(make([]byte, ctlSize))
	assert.Error(t, err)
	long := &ctlMsg{kind: ctlFail, text: string(make([]byte, 1000))}
	got, err = decodeCtl(long.encode())
	require.NoError(t, err)
	assert.Len(t, got.text, ctlTextBytes)
}
