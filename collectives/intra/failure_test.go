package intra

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

func TestTimeoutWhenARankNeverArrives(t *testing.T) {
	const p = 3
	w := newWorld(t, p, testArenaConfig(""))
	n := 64 << 10 // pipelined
	start := time.Now()
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		if r == 2 {
			return nil // never calls
		}
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		buf := make([]byte, n)
		return AllReduce(ctx, a, seq, buf, buf, reduce.Float32, reduce.Sum, 0)
	})
	assert.Less(t, time.Since(start), 2*time.Second)
	for r := range 2 {
		require.ErrorIs(t, errs[r], context.DeadlineExceeded, "rank %d", r)
		assert.Contains(t, errs[r].Error(), "peer rank 2")
	}
	// The ranks are now out of step: the arena refuses further work.
	err := Barrier(context.Background(), w.arenas[0], 99)
	assert.ErrorIs(t, err, arena.ErrBroken)
}

func TestInvalidArgumentsLeaveArenaUsable(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	cases := []struct {
		name string
		call func(ctx context.Context, a *arena.Arena, seq uint64) error
	}{
		{"recv length", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			return AllReduce(ctx, a, seq, make([]byte, 8), make([]byte, 4), reduce.Float32, reduce.Sum, 0)
		}},
		{"partial elements", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			return AllReduce(ctx, a, seq, make([]byte, 6), make([]byte, 6), reduce.Float32, reduce.Sum, 0)
		}},
		{"bitwise float", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			return AllReduce(ctx, a, seq, make([]byte, 8), make([]byte, 8), reduce.Float32, reduce.Bxor, 0)
		}},
		{"partial overlap", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			b := make([]byte, 12)
			return AllReduce(ctx, a, seq, b[:8], b[4:], reduce.Float32, reduce.Sum, 0)
		}},
		{"root", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			return Broadcast(ctx, a, seq, nil, make([]byte, 4), 2)
		}},
		{"allgather recv", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			return AllGather(ctx, a, seq, make([]byte, 4), make([]byte, 4))
		}},
		{"reducescatter send", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			return ReduceScatter(ctx, a, seq, make([]byte, 4), make([]byte, 4), reduce.Int32, reduce.Sum, 0)
		}},
		{"alltoall counts", func(ctx context.Context, a *arena.Arena, seq uint64) error {
			return AllToAllV(ctx, a, seq, make([]byte, 4), []int{4}, []int{0}, make([]byte, 4), []int{4}, []int{0})
		}},
		{"nil arena", func(ctx context.Context, _ *arena.Arena, seq uint64) error {
			return Barrier(ctx, nil, seq)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(context.Background(), w.arenas[0], 1)
			assert.ErrorIs(t, err, errInvalid(), c.name)
		})
	}
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
}

// TestPeerKilledMidOp kills the process of rank 1 while both ranks run
// large all_reduces: rank 0 must fail within about a second with an error
// naming rank 1, and no segment file may be left.
func TestPeerKilledMidOp(t *testing.T) {
	ctx, a, cmd, dir := helperArena(t, "spin", "kill", 20*time.Second, smallDataArena)
	buf := make([]byte, spinBytes)
	require.NoError(t, AllReduce(ctx, a, 1, buf, buf, reduce.Float32, reduce.Sum, 0))
	// Both ranks returned from Connect: their segments are unlinked.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "segments are unlinked once both ranks mapped them")

	killMidOps(t, cmd, func(seq uint64) error {
		return AllReduce(ctx, a, seq, buf, buf, reduce.Float32, reduce.Sum, 0)
	})
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// spinBytes is the all_reduce size of the "spin" helper: several pipeline
// rounds through a 1 MiB data area.
const spinBytes = 4 << 20

// helperSpin runs all_reduces until killed (or until ctx ends).
func helperSpin(ctx context.Context, a *arena.Arena) error {
	return spinAllReduce(ctx, a, nil, spinBytes)
}
