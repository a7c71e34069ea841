package intra

import (
	"context"
	"testing"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// TestPublicAPIWithDefaults runs every public entry point with the default
// tuning, at sizes on both sides of its thresholds and beyond a (reduced)
// data area, at p = 3.
func TestPublicAPIWithDefaults(t *testing.T) {
	const p = 3
	w := newWorld(t, p, arena.Config{Dir: shmDir(t), DataBytes: 1 << 20})
	dt, op := reduce.Float32, reduce.Sum
	for _, n := range []int{4, 1 << 10, 200 << 10, 3<<20 + 1} { // elements
		inputs := make([][]byte, p)
		for r := range p {
			inputs[r] = input(dt, op, n, r, uint64(n))
		}
		want := refReduce(dt, op, 0, inputs)
		got := make([][]byte, p)
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			got[r] = make([]byte, len(want))
			return AllReduce(ctx, a, seq, inputs[r], got[r], dt, op, 0)
		})
		for r := range p {
			requireSameBytes(t, want, got[r], "allreduce n=%d rank %d", n, r)
		}
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			var recv []byte
			if r == 1 {
				recv = make([]byte, len(want))
				got[r] = recv
			}
			return Reduce(ctx, a, seq, inputs[r], recv, dt, op, 0, 1)
		})
		requireSameBytes(t, want, got[1], "reduce n=%d", n)

		m := n / p * dt.Size() // block bytes
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			got[r] = make([]byte, m)
			return ReduceScatter(ctx, a, seq, inputs[r][:p*m], got[r], dt, op, 0)
		})
		for r := range p {
			requireSameBytes(t, want[r*m:(r+1)*m], got[r], "reducescatter n=%d rank %d", n, r)
		}
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			got[r] = make([]byte, p*m)
			return AllGather(ctx, a, seq, inputs[r][:m], got[r])
		})
		for r := range p {
			for j := range p {
				requireSameBytes(t, inputs[j][:m], got[r][j*m:(j+1)*m], "allgather n=%d rank %d block %d", n, r, j)
			}
		}
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			got[r] = make([]byte, len(want))
			return Broadcast(ctx, a, seq, inputs[r], got[r], 2)
		})
		for r := range p {
			requireSameBytes(t, inputs[2], got[r], "broadcast n=%d rank %d", n, r)
		}
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			counts, displs := make([]int, p), make([]int, p)
			for j := range p {
				counts[j], displs[j] = m, j*m
			}
			got[r] = make([]byte, p*m)
			return AllToAllV(ctx, a, seq, inputs[r][:p*m], counts, displs, got[r], counts, displs)
		})
		for r := range p {
			for j := range p {
				requireSameBytes(t, inputs[j][r*m:(r+1)*m], got[r][j*m:(j+1)*m], "alltoall n=%d rank %d from %d", n, r, j)
			}
		}
	}
}
