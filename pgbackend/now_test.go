package pgbackend

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// i32s are n int32 elements of rank r: v(r, i) = 100*r + i.
func i32s(r, n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(100*r+i))
	}
	return b
}

// nowCase is one collective as every rank calls it: call makes the rank's
// Call and its output buffer; want is that output as it must end.
type nowCase struct {
	name string
	call func(c *Communicator, n int) (Call, []byte, error)
	want func(rank, size, n int) []byte
}

func sumOver(size, n, block int) []byte {
	out := make([]byte, 4*n)
	for i := range n {
		var s int32
		for r := range size {
			s += int32(100*r + block*n + i)
		}
		binary.LittleEndian.PutUint32(out[4*i:], uint32(s))
	}
	return out
}

var nowCases = []nowCase{
	{"allreduce",
		func(c *Communicator, n int) (Call, []byte, error) {
			b := i32s(c.Rank(), n)
			call, err := c.AllReduceCall(b, b, reduce.Int32, reduce.Sum, 0, StreamDefault)
			return call, b, err
		},
		func(_, size, n int) []byte { return sumOver(size, n, 0) }},
	{"broadcast",
		func(c *Communicator, n int) (Call, []byte, error) {
			b := i32s(c.Rank(), n)
			call, err := c.BroadcastCall(b, b, 1, StreamDefault)
			return call, b, err
		},
		func(_, _, n int) []byte { return i32s(1, n) }},
	{"reduce",
		func(c *Communicator, n int) (Call, []byte, error) {
			recv := make([]byte, 4*n)
			call, err := c.ReduceCall(i32s(c.Rank(), n), recv, reduce.Int32, reduce.Sum, 0, 2, StreamDefault)
			return call, recv, err
		},
		func(rank, size, n int) []byte {
			if rank != 2 {
				return make([]byte, 4*n)
			}
			return sumOver(size, n, 0)
		}},
	{"allgather",
		func(c *Communicator, n int) (Call, []byte, error) {
			recv := make([]byte, 4*n*c.Size())
			call, err := c.AllGatherCall(i32s(c.Rank(), n), recv, StreamDefault)
			return call, recv, err
		},
		func(_, size, n int) []byte {
			out := []byte{}
			for r := range size {
				out = append(out, i32s(r, n)...)
			}
			return out
		}},
	{"reducescatter",
		func(c *Communicator, n int) (Call, []byte, error) {
			recv := make([]byte, 4*n)
			call, err := c.ReduceScatterCall(i32s(c.Rank(), n*c.Size()), recv, reduce.Int32, reduce.Sum, 0, StreamDefault)
			return call, recv, err
		},
		func(rank, size, n int) []byte { return sumOver(size, n, rank) }},
	{"alltoall",
		func(c *Communicator, n int) (Call, []byte, error) {
			size, block := c.Size(), 4*n
			counts, displs := make([]int, size), make([]int, size)
			for i := range counts {
				counts[i], displs[i] = block, i*block
			}
			recv := make([]byte, block*size)
			call, err := c.AllToAllVCall(i32s(c.Rank(), n*size), counts, displs, recv, counts, displs, StreamDefault)
			return call, recv, err
		},
		func(rank, size, n int) []byte {
			out := []byte{}
			for r := range size {
				out = append(out, i32s(r, n*size)[4*n*rank:4*n*(rank+1)]...)
			}
			return out
		}},
	{"barrier",
		func(c *Communicator, _ int) (Call, []byte, error) {
			call, err := c.BarrierCall(StreamDefault)
			return call, nil, err
		},
		func(_, _, _ int) []byte { return nil }},
}

// runNow runs call at once, failing the test if RunNow keeps refusing it
// (a stream whose last op a worker ran is busy for a moment after its
// waiter returned).
func runNow(t *testing.T, c *Communicator, call Call) error {
	t.Helper()
	for deadline := time.Now().Add(time.Second); ; {
		ran, err := c.RunNow(call, nil)
		if ran {
			return err
		}
		require.True(t, time.Now().Before(deadline), "rank %d: RunNow refused the op", c.Rank())
		time.Sleep(10 * time.Microsecond) // poll interval
	}
}

// Ranks that run a collective at once meet ranks that queue it, for every
// collective with an arena path and sizes 0, 1, odd and past an inline
// slot, and all end with the reference's bytes.
func TestRunNowMeetsQueuedRanks(t *testing.T) {
	cs := connectAll(t, []string{"h", "h", "h"}, testConfig())
	inline := cs[0].arenas[StreamDefault].InlineBytes() / 4
	for _, tc := range nowCases {
		for _, n := range []int{0, 1, 7, inline + 1, 70000} {
			now := uint(n+len(tc.name))%7 + 1 // the ranks that run it at once: varies, at least one
			outs := make([][]byte, len(cs))
			eachRank(cs, func(c *Communicator) {
				call, out, err := tc.call(c, n)
				require.NoError(t, err)
				outs[c.Rank()] = out
				if now&(1<<c.Rank()) != 0 {
					assert.NoError(t, runNow(t, c, call))
					return
				}
				w, err := c.Submit(call, nil)
				wait(t, w, err)
			})
			for r := range cs {
				require.Equal(t, tc.want(r, len(cs), n), outs[r], "%s n=%d now=%03b rank %d", tc.name, n, now, r)
			}
		}
	}
}

// An op run at once is recorded as a queued one is: route "arena", its
// sequence number, done; it counts as a call of its kind.
func TestRunNowFlightRecordAndStats(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, testConfig())
	eachRank(cs, func(c *Communicator) {
		call, err := c.BroadcastCall(f32(1, 2), make([]byte, 8), 0, StreamHighPriority)
		require.NoError(t, err)
		assert.NoError(t, runNow(t, c, call))
	})
	entries, total := cs[1].flight.snapshot()
	require.EqualValues(t, 1, total)
	e := entries[0]
	assert.Equal(t, "broadcast", e.op.Kind)
	assert.Equal(t, "arena", e.op.Route)
	assert.EqualValues(t, 1, e.op.Seq)
	assert.Equal(t, StreamHighPriority, e.op.Stream)
	assert.Equal(t, stateDone, e.state)
	assert.EqualValues(t, 1, cs[1].Stats().Ops["broadcast"].Calls)
}

// RunNow leaves to the queued path what it may not run, taking no
// sequence number.
func TestRunNowRefusesWhatItCannotRun(t *testing.T) {
	oneHost := []string{"h", "h"}
	noLane, check, forced := testConfig(), testConfig(), testConfig()
	noLane.FastLane = false
	check.Check = true
	forced.Algo = map[string]collectives.Algorithm{"allgather": collectives.Ring}
	tcpOnly := testConfig()
	tcpOnly.Transport = "tcp"
	gather := func(c *Communicator) (Call, error) { return c.AllGatherCall(f32(1), make([]byte, 8), StreamDefault) }
	tests := []struct {
		name  string
		hosts []string
		cfg   Config
		call  func(c *Communicator) (Call, error)
	}{
		{"HCCL_GO_FAST_LANE=0", oneHost, noLane, gather},
		{"HCCL_GO_CHECK", oneHost, check, gather},
		{"algorithm forced", oneHost, forced, gather},
		{"no arena", oneHost, tcpOnly, gather},
		{"two hosts", []string{"a", "b"}, testConfig(), gather},
		{"bad arguments", oneHost, testConfig(), func(c *Communicator) (Call, error) {
			return c.AllGatherCall(f32(1), make([]byte, 4), StreamDefault)
		}},
		{"bad stream", oneHost, testConfig(), func(c *Communicator) (Call, error) {
			return c.BarrierCall(9)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := connectAll(t, tc.hosts, tc.cfg)
			ran, err := cs[0].RunNow(tc.call(cs[0]))
			assert.False(t, ran)
			assert.NoError(t, err, "RunNow leaves errors to Submit")
			assert.Zero(t, cs[0].SequenceNumber(), "a refused op must not take a sequence number")
		})
	}
}

// An op queued and not yet run keeps RunNow away: it would overtake it.
func TestRunNowDoesNotOvertakeAQueuedOp(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, testConfig())
	first, err := cs[1].Barrier(StreamDefault) // rank 0 has not entered it
	require.NoError(t, err)
	ran, err := cs[1].RunNow(cs[1].BarrierCall(StreamDefault))
	require.NoError(t, err)
	require.False(t, ran, "RunNow overtook a queued op")
	w, err := cs[0].Barrier(StreamDefault)
	wait(t, w, err)
	wait(t, first, nil)
}
