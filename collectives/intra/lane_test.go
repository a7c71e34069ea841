package intra

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// startLaneAllReduce is the first half, as export/lane.c runs it, of a one-epoch all_reduce (at most
// limit = LaneLimit(a) bytes, not declined): it publishes send (scaled by preMul for
// PreMulSum) in this rank's buffer of the next epoch and posts it, and
// returns that epoch for FinishLaneAllReduce. On error nothing was posted.
func startLaneAllReduce(a *arena.Arena, limit int, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) (uint64, error) {
	if err := checkAllReduce(a, send, recv, dt, op); err != nil {
		return 0, wrapOp("allreduce", a, seq, err)
	}
	if n := len(send); a.Size() < 2 || n > limit {
		return 0, wrapOp("allreduce", a, seq, args.Invalidf("%d bytes on %d ranks do not take one epoch (limit %d)", n, a.Size(), limit))
	}
	if err := a.Begin(seq); err != nil {
		return 0, wrapOp("allreduce", a, seq, err)
	}
	r := laneReduction(a, seq, len(send), dt, op, preMul)
	e := a.Next()
	publish(r.dt, r.op, r.preMul, laneBuffer(a, a.Index(), e, len(send)), send)
	postFirst(a, e, r.stamp)
	a.End(nil)
	return e, nil
}

// laneDeclines reports whether an all_reduce of n bytes (at most
// LaneLimit) must not take the lane because AllReduceWith, with sc, would
// run it otherwise: in the single-copy range until the ranks have agreed
// against single-copy (the agreement, and single-copy itself, take epochs
// of their own). The C lane makes the same test on SingleCopyWords.
func laneDeclines(a *arena.Arena, sc *SingleCopy, n int) bool {
	return sc.usable(n, a.Size(), defaultTuning())
}

// laneAllReduce runs an all_reduce through the two halves of the fast lane.
func laneAllReduce(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64) error {
	e, err := startLaneAllReduce(a, LaneLimit(a), seq, send, recv, dt, op, preMul)
	if err != nil {
		return err
	}
	return FinishLaneAllReduce(ctx, a, seq, e, recv, dt, op)
}

// The halves meet AllReduce on the ranks that do not take the lane and give
// the reference's result, bit for bit, for every dtype and op, sizes up to
// the lane's limit (inline slots, then data halves), in and out of place.
func TestLaneHalvesMatchAllReduce(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			inline, limit := w.arenas[0].InlineBytes(), LaneLimit(w.arenas[0])
			require.Greater(t, limit, inline)
			for _, pair := range validPairs() {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				for _, n := range []int{0, 1, 7, inline / dt.Size(), inline/dt.Size() + 1, limit / dt.Size()} {
					for _, lanes := range []uint{0b01, 0b10, 0b11} { // which ranks take the lane
						seed := uint64(n)*131 + uint64(dt)*17 + uint64(op)
						run := func(ctx context.Context, a *arena.Arena, r int, seq uint64, send, recv []byte) error {
							if lanes&(1<<r) != 0 {
								return laneAllReduce(ctx, a, seq, send, recv, dt, op, testPreMul)
							}
							return AllReduce(ctx, a, seq, send, recv, dt, op, testPreMul)
						}
						requireReferenceReduction(t, w, dt, op, n, seed, n%2 == 0, run, fmt.Sprintf("lanes=%b", lanes))
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
	e, err := startLaneAllReduce(w.arenas[0], LaneLimit(w.arenas[0]), 1, buf, buf, reduce.Float32, reduce.Sum, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = FinishLaneAllReduce(ctx, w.arenas[0], 1, e, buf, reduce.Float32, reduce.Sum)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "peer rank 1")
	require.ErrorIs(t, Barrier(context.Background(), w.arenas[0], 2), arena.ErrBroken)
}

func TestLaneRefusesWhatTakesMoreThanOneEpoch(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	a := w.arenas[0]
	limit := LaneLimit(a)
	big := make([]byte, limit+4)
	_, err := startLaneAllReduce(a, limit, 1, big, big, reduce.Float32, reduce.Sum, 0)
	require.ErrorIs(t, err, errInvalid())
	_, err = startLaneAllReduce(a, limit, 1, make([]byte, 8), make([]byte, 8), reduce.Float32, reduce.Bxor, 0)
	require.ErrorIs(t, err, errInvalid())
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
}

// The lane's limit is where AllReduceWith leaves one epoch: one-shot's
// limit within one chunk of the data halves.
func TestLaneLimit(t *testing.T) {
	w := newWorld(t, 2, arena.Config{})
	a, tu := w.arenas[0], defaultTuning()
	require.Equal(t, min(tu.oneShotLimit(2), oneShotChunk(a, tu)), LaneLimit(a))
	require.Equal(t, -1, LaneLimit(nil))
}

// The lane declines the single-copy range while AllReduceWith would run
// the agreement or single-copy there, and takes it once the ranks agreed
// against single-copy: then a rank in the lane meets one that is not.
func TestLaneDeclinesSingleCopyUntilAgreedOff(t *testing.T) {
	w := newWorld(t, 2, arena.Config{})
	tu := defaultTuning()
	require.LessOrEqual(t, tu.singleCopyMin, LaneLimit(w.arenas[0]), "the test needs the ranges to overlap")
	scs := []*SingleCopy{NewSingleCopy(false), NewSingleCopy(false)}
	for _, tc := range []struct {
		name string
		sc   *SingleCopy
		n    int
		want bool
	}{
		{"no single-copy state", nil, tu.singleCopyMin, false},
		{"below the range", scs[0], tu.singleCopyMin - 1, false},
		{"undecided", scs[0], tu.singleCopyMin, true},
		{"undecided, enabled", NewSingleCopy(true), tu.singleCopyMin, true},
	} {
		require.Equal(t, tc.want, laneDeclines(w.arenas[0], tc.sc, tc.n), tc.name)
	}
	state, lo, hi := SingleCopyWords(scs[0], 2)
	require.Equal(t, scUndecided, *state)
	require.Equal(t, [2]int{tu.singleCopyMin, tu.singleCopyLimit(2)}, [2]int{lo, hi})

	n := tu.singleCopyMin
	inputs := [][]byte{input(reduce.Float32, reduce.Sum, n/4, 0, 7), input(reduce.Float32, reduce.Sum, n/4, 1, 7)}
	want := refReduce(reduce.Float32, reduce.Sum, 0, inputs)
	for round, lanes := range []uint{0b00, 0b01, 0b10} { // the first round agrees
		outs := make([][]byte, 2)
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			outs[r] = append([]byte(nil), inputs[r]...)
			if lanes&(1<<r) != 0 {
				require.False(t, laneDeclines(a, scs[r], n), "round %d rank %d", round, r)
				return laneAllReduce(ctx, a, seq, outs[r], outs[r], reduce.Float32, reduce.Sum, 0)
			}
			return AllReduceWith(ctx, a, scs[r], seq, outs[r], outs[r], reduce.Float32, reduce.Sum, 0)
		})
		for r := range 2 {
			requireSameBytes(t, want, outs[r], "round %d rank %d", round, r)
		}
		require.Equal(t, SingleCopyOff, *state, "round %d", round)
	}
}
