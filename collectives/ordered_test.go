package collectives_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// smallInts is rank r's input of n elements of dt: small integers (exact in
// every type and under every op the tests use), different per rank and
// element.
func smallInts(dt reduce.DType, r, n int) []byte {
	b := make([]byte, n*dt.Size())
	for i := range n {
		v := (r*7+i*3)%11 + 1
		switch dt {
		case reduce.Float32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case reduce.Int32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		default:
			panic("smallInts: unsupported dtype")
		}
	}
	return b
}

// flatAllReduce is the reference: the ordinary ring all_reduce.
func flatAllReduce(t *testing.T, p int, dt reduce.DType, op reduce.Op, preMul float64, n int) []byte {
	t.Helper()
	out := make([][]byte, p)
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		out[r] = make([]byte, n*dt.Size())
		return collectives.AllReduce(ctx, ep, 1, smallInts(dt, r, n), out[r], dt, op, collectives.Options{Algo: collectives.Ring, PreMul: preMul})
	}))
	return out[0]
}

// TestOrderedRings: rings along a permutation give the same results as in
// rank order, blocks in their rank-order places.
func TestOrderedRings(t *testing.T) {
	const p, n = 5, 37
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {0, 3, 1, 4, 2}, {4, 2, 0, 1, 3}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			want := flatAllReduce(t, p, reduce.Int32, reduce.Sum, 0, p*n)
			type result struct{ ar, ag, rs, bc []byte }
			got := make([]result, p)
			requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
				r := ep.Rank()
				in := smallInts(reduce.Int32, r, p*n)
				res := result{ar: make([]byte, len(in)), ag: make([]byte, p*len(in)), rs: make([]byte, n*4), bc: make([]byte, len(in))}
				o := collectives.Options{Algo: collectives.Ring, ChunkBytes: 32}
				if err := collectives.OrderedAllReduce(ctx, ep, 1, in, res.ar, reduce.Int32, reduce.Sum, order, o); err != nil {
					return err
				}
				if err := collectives.OrderedAllGather(ctx, ep, 2, in, res.ag, order, collectives.Options{}); err != nil {
					return err
				}
				if err := collectives.OrderedReduceScatter(ctx, ep, 3, in, res.rs, reduce.Int32, reduce.Sum, order, collectives.Options{}); err != nil {
					return err
				}
				if err := collectives.OrderedBroadcast(ctx, ep, 4, in, res.bc, 3, order, collectives.Options{Algo: collectives.Chain, ChunkBytes: 64}); err != nil {
					return err
				}
				got[r] = res
				return nil
			}))
			var gathered []byte
			for r := range p {
				gathered = append(gathered, smallInts(reduce.Int32, r, p*n)...)
			}
			for r := range p {
				require.Equal(t, want, got[r].ar, "allreduce rank %d", r)
				require.Equal(t, gathered, got[r].ag, "allgather rank %d", r)
				require.Equal(t, want[r*n*4:(r+1)*n*4], got[r].rs, "reducescatter rank %d", r)
				require.Equal(t, smallInts(reduce.Int32, 3, p*n), got[r].bc, "broadcast rank %d", r)
			}
		})
	}
	errs := runRanks(t, 3, func(ctx context.Context, ep transport.Endpoint) error {
		buf := make([]byte, 12)
		return collectives.OrderedAllReduce(ctx, ep, 1, buf, buf, reduce.Int32, reduce.Sum, []int{0, 1, 1}, collectives.Options{})
	})
	for _, err := range errs {
		require.ErrorIs(t, err, collectives.ErrInvalidArgument)
	}
}
