package collectives_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// sparseInput is one rank's pairs: small integers as values (so every sum
// is exact in every type), indices random with repeats.
type sparseInput struct {
	indices []int64
	values  []byte
}

func putValue(dt reduce.DType, b []byte, v int64) {
	switch dt {
	case reduce.Float32:
		binary.NativeEndian.PutUint32(b, math.Float32bits(float32(v)))
	case reduce.Float64:
		binary.NativeEndian.PutUint64(b, math.Float64bits(float64(v)))
	case reduce.Int32:
		binary.NativeEndian.PutUint32(b, uint32(int32(v)))
	case reduce.Int64:
		binary.NativeEndian.PutUint64(b, uint64(v))
	}
}

func makeSparse(rng *rand.Rand, dt reduce.DType, n, nnz int) sparseInput {
	in := sparseInput{indices: make([]int64, nnz), values: make([]byte, nnz*dt.Size())}
	for j := range nnz {
		in.indices[j] = rng.Int64N(int64(n))
		putValue(dt, in.values[j*dt.Size():], rng.Int64N(201)-100)
	}
	return in
}

// densify adds a rank's pairs into a dense buffer (the reference).
func densify(dt reduce.DType, dense []byte, in sparseInput) {
	es := dt.Size()
	one := make([]byte, es)
	for j, i := range in.indices {
		copy(one, in.values[j*es:(j+1)*es])
		reduce.Reduce(dt, reduce.Sum, dense[int(i)*es:(int(i)+1)*es], one)
	}
}

// sparseRun runs SparseAllReduce on p ranks and returns every rank's result
// and what rank 0 reports.
func sparseRun(t *testing.T, dt reduce.DType, n int, inputs []sparseInput, o collectives.SparseOptions) ([][]byte, collectives.SparseResult) {
	t.Helper()
	p := len(inputs)
	outs := make([][]byte, p)
	results := make([]collectives.SparseResult, p)
	noErrors(t, inWorld(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		outs[r] = make([]byte, n*dt.Size())
		for i := range outs[r] {
			outs[r][i] = 0xA5 // the output is overwritten, not added to
		}
		var err error
		results[r], err = collectives.SparseAllReduce(ctx, ep, 3, inputs[r].indices, inputs[r].values, dt, outs[r], o)
		return err
	}))
	for r := 1; r < p; r++ {
		require.Equal(t, results[0], results[r], "rank %d chose differently", r)
	}
	return outs, results[0]
}

// denseAllReduce is the dense all_reduce of the same contributions.
func denseAllReduce(t *testing.T, dt reduce.DType, n int, inputs []sparseInput) []byte {
	t.Helper()
	var out []byte
	noErrors(t, inWorld(t, len(inputs), func(ctx context.Context, ep transport.Endpoint) error {
		buf := make([]byte, n*dt.Size())
		densify(dt, buf, inputs[ep.Rank()])
		if ep.Rank() == 0 {
			out = buf
		}
		return collectives.AllReduce(ctx, ep, 3, buf, buf, dt, reduce.Sum, collectives.Options{})
	}))
	return out
}

func TestSparseAllReduceEqualsDense(t *testing.T) {
	for _, dt := range collectives.SparseValueTypes {
		for _, p := range []int{1, 2, 3, 4} {
			for _, c := range []struct{ n, nnz int }{{1, 0}, {1, 3}, {10, 4}, {1000, 10}, {100_000, 1000}} {
				t.Run(fmt.Sprintf("%s/p%d/n%d/nnz%d", dt, p, c.n, c.nnz), func(t *testing.T) {
					inputs := make([]sparseInput, p)
					for r := range p {
						// Ranks contribute different amounts; rank 1 none.
						nnz := c.nnz * (r + 1) / 2
						if r == 1 {
							nnz = 0
						}
						inputs[r] = makeSparse(rand.New(rand.NewPCG(uint64(c.n), uint64(r))), dt, c.n, nnz)
					}
					outs, res := sparseRun(t, dt, c.n, inputs, collectives.SparseOptions{})
					want := denseAllReduce(t, dt, c.n, inputs)
					for r := range p {
						require.Equal(t, want, outs[r], "rank %d", r)
					}
					total := 0
					for _, in := range inputs {
						total += len(in.indices)
					}
					require.Equal(t, total, res.TotalNNZ)
				})
			}
		}
	}
}

// TestSparseAllReduceDenseSwitch: past the fill-in threshold the exchange
// goes dense, with the same result; DenseFactor moves the threshold.
func TestSparseAllReduceDenseSwitch(t *testing.T) {
	const p, n = 3, 3000
	dt := reduce.Float32
	// Pairs are 8 bytes (int32 index + float32) against 4 per dense element:
	// dense once the ranks together contribute more than n/2 pairs.
	cases := []struct {
		name      string
		perRank   int
		factor    float64
		wantDense bool
	}{
		{"just below", n / 2 / p, 0, false},
		{"just above", n/2/p + 1, 0, true},
		{"crowded", n, 0, true},
		{"crowded but factor 10", n, 10, false},
		{"sparse but factor 0.01", 10, 0.01, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inputs := make([]sparseInput, p)
			for r := range p {
				inputs[r] = makeSparse(rand.New(rand.NewPCG(7, uint64(r))), dt, n, c.perRank)
			}
			outs, res := sparseRun(t, dt, n, inputs, collectives.SparseOptions{DenseFactor: c.factor})
			require.Equal(t, c.wantDense, res.Dense)
			want := denseAllReduce(t, dt, n, inputs)
			for r := range p {
				require.Equal(t, want, outs[r], "rank %d", r)
			}
		})
	}
}

// TestSparseAllReduceDenseHook: the dense path runs the caller's all_reduce.
func TestSparseAllReduceDenseHook(t *testing.T) {
	var calls atomic.Int32
	o := collectives.SparseOptions{DenseFactor: 1e-9}
	o.Dense = func(ctx context.Context, buf []byte) error {
		calls.Add(1)
		return nil // leaves each rank's own pairs: enough to see it ran
	}
	inputs := []sparseInput{
		{indices: []int64{1}, values: putF32s([]float32{5})},
		{indices: []int64{2}, values: putF32s([]float32{7})},
	}
	outs, res := sparseRun(t, reduce.Float32, 4, inputs, o)
	require.True(t, res.Dense)
	require.Equal(t, int32(2), calls.Load())
	require.Equal(t, []float32{0, 5, 0, 0}, getF32s(outs[0]))
	require.Equal(t, []float32{0, 0, 7, 0}, getF32s(outs[1]))
}

func TestSparseAllReduceInvalid(t *testing.T) {
	f32 := reduce.Float32
	cases := []struct {
		name    string
		dt      reduce.DType
		indices []int64
		values  []byte
		n       int
	}{
		{"index too large", f32, []int64{4}, putF32s([]float32{1}), 4},
		{"negative index", f32, []int64{-1}, putF32s([]float32{1}), 4},
		{"values too short", f32, []int64{0, 1}, putF32s([]float32{1}), 4},
		{"float16 values", reduce.Float16, []int64{0}, make([]byte, 2), 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := inWorld(t, 1, func(ctx context.Context, ep transport.Endpoint) error {
				_, err := collectives.SparseAllReduce(ctx, ep, 1, c.indices, c.values, c.dt, make([]byte, c.n*c.dt.Size()), collectives.SparseOptions{})
				return err
			})
			require.ErrorIs(t, errs[0], collectives.ErrInvalidArgument)
		})
	}
	// Ranks that disagree on the dense length all fail, none hangs.
	errs := inWorld(t, 3, func(ctx context.Context, ep transport.Endpoint) error {
		n := 8 + ep.Rank()/2
		_, err := collectives.SparseAllReduce(ctx, ep, 1, nil, nil, f32, make([]byte, 4*n), collectives.SparseOptions{})
		return err
	})
	for r, err := range errs {
		require.ErrorIs(t, err, collectives.ErrInvalidArgument, "rank %d", r)
	}
}
