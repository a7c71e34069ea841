package intra

import (
	"context"
	"fmt"
	"testing"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

const testPreMul = 0.75

func TestAllReduceMatrix(t *testing.T) {
	for _, p := range worlds {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			for _, pair := range matrixPairs(p) {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				for _, n := range counts(p, dt.Size(), cfg) {
					for _, inPlace := range []bool{false, true} {
						verifyAllReduce(t, w, nil, dt, op, n, inPlace, testTuning())
					}
				}
			}
		})
	}
}

// verifyAllReduce runs one all_reduce and compares every rank's result with
// the sequential reference, bit for bit. scs holds each rank's single-copy
// state (nil: none).
func verifyAllReduce(t *testing.T, w *world, scs []*SingleCopy, dt reduce.DType, op reduce.Op, n int, inPlace bool, tu tuning) {
	t.Helper()
	seed := uint64(n)*131 + uint64(dt)*17 + uint64(op)
	run := func(ctx context.Context, a *arena.Arena, r int, seq uint64, send, recv []byte) error {
		if err := checkAllReduce(a, send, recv, dt, op); err != nil {
			return err
		}
		var sc *SingleCopy
		if scs != nil {
			sc = scs[r]
		}
		return allReduce(ctx, a, sc, seq, send, recv, dt, op, testPreMul, tu)
	}
	requireReferenceReduction(t, w, dt, op, n, seed, inPlace, run, fmt.Sprintf("p=%d", len(w.arenas)))
}
