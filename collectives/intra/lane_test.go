package intra

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// laneAllReduce runs an all_reduce through the two halves of the fast lane.
func laneAllReduce(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	e, err := StartInlineAllReduce(a, seq, send, recv, dt, op, preMul)
	if err != nil {
		return err
	}
	return FinishInlineAllReduce(ctx, a, seq, e, recv, dt, op)
}

// The halves meet AllReduce on the ranks that do not take the lane and give
// the reference's result, bit for bit, for every dtype and op, sizes up to
// an inline slot, in and out of place.
func TestLaneHalvesMatchAllReduce(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			inline := w.arenas[0].InlineBytes()
			for _, pair := range validPairs() {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				for _, n := range []int{0, 1, 7, inline / dt.Size()} {
					for _, lanes := range []uint{0b01, 0b10, 0b11} { // which ranks take the lane
						seed := uint64(n)*131 + uint64(dt)*17 + uint64(op)
						inputs := make([][]byte, p)
						for r := range p {
							inputs[r] = input(dt, op, n, r, seed)
						}
						want := refReduce(dt, op, testPreMul, inputs)
						outs := make([][]byte, p)
						w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
							send := append([]byte(nil), inputs[r]...)
							recv := send
							if n%2 == 1 {
								recv = make([]byte, len(send))
							}
							outs[r] = recv
							if lanes&(1<<r) != 0 {
								return laneAllReduce(ctx, a, seq, send, recv, dt, op, testPreMul)
							}
							return AllReduce(ctx, a, seq, send, recv, dt, op, testPreMul)
						})
						for r := range p {
							requireSameBytes(t, want, outs[r], "%v %v n=%d lanes=%b rank %d", dt, op, n, lanes, r)
						}
					}
				}
			}
		})
	}
}

func TestLaneMismatchFailsEveryRankAndKeepsArena(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		buf := make([]byte, 8*(r+1)) // rank 1 sends twice as much
		return laneAllReduce(ctx, a, seq, buf, buf, reduce.Float32, reduce.Sum, 0)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
	}
	require.Contains(t, errs[0].Error(), "rank 1 has 16 bytes, this rank 8")
	// Still in step: the next op works.
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error {
		buf := make([]byte, 8)
		return laneAllReduce(ctx, a, seq, buf, buf, reduce.Float32, reduce.Sum, 0)
	})
}

func TestLaneFinishTimesOutAndNamesThePeer(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	buf := make([]byte, 8)
	e, err := StartInlineAllReduce(w.arenas[0], 1, buf, buf, reduce.Float32, reduce.Sum, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = FinishInlineAllReduce(ctx, w.arenas[0], 1, e, buf, reduce.Float32, reduce.Sum)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "peer rank 1")
	require.ErrorIs(t, Barrier(context.Background(), w.arenas[0], 2), arena.ErrBroken)
}

func TestLaneRefusesWhatIsNotInline(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	big := make([]byte, w.arenas[0].InlineBytes()+4)
	_, err := StartInlineAllReduce(w.arenas[0], 1, big, big, reduce.Float32, reduce.Sum, 0)
	require.ErrorIs(t, err, errInvalid())
	_, err = StartInlineAllReduce(w.arenas[0], 1, make([]byte, 8), make([]byte, 8), reduce.Float32, reduce.Bxor, 0)
	require.ErrorIs(t, err, errInvalid())
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
}
