package collectives_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// compressedCase runs a compressed all_reduce on p ranks and checks it
// against the exact (float64) result with the documented bound, and that
// all ranks agree bitwise. It returns rank 0's result and the inputs.
func compressedCase(t *testing.T, p, n int, c collectives.Compression, op reduce.Op, inPlace bool, o collectives.Options, scale float64) {
	t.Helper()
	inputs := make([][]float32, p)
	for r := range inputs {
		inputs[r] = gradientLike(rand.New(rand.NewPCG(uint64(n), uint64(r))), n, scale)
	}
	results := make([][]byte, p)
	noErrors(t, inWorld(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		send := putF32s(inputs[ep.Rank()])
		recv := send
		if !inPlace {
			recv = make([]byte, len(send))
		}
		results[ep.Rank()] = recv
		return collectives.AllReduceCompressed(ctx, ep, 7, send, recv, reduce.Float32, op, c, o)
	}))
	for r := 1; r < p; r++ {
		require.Equal(t, results[0], results[r], "rank %d differs from rank 0", r)
	}
	mul := 1.0
	switch op {
	case reduce.Avg:
		mul = 1 / float64(p)
	case reduce.PreMulSum:
		mul = o.PreMul
	}
	// p roundings to 16 bits, p float32 additions (and the PreMul and Avg
	// scalings), each bounded relative to the sum of magnitudes.
	rel := float64(p)*c.UnitRoundoff() + float64(p+2)*math.Pow(2, -24)
	got := getF32s(results[0])
	for i := range n {
		exact, mag := 0.0, 0.0
		for r := range p {
			x := float64(inputs[r][i])
			exact += x
			mag += math.Abs(x)
		}
		exact *= mul
		bound := rel*mag*math.Abs(mul) + 1e-30
		if math.Abs(float64(got[i])-exact) > bound {
			t.Fatalf("element %d: got %g, exact %g, error %g > bound %g", i, got[i], exact, math.Abs(float64(got[i])-exact), bound)
		}
	}
}

// bigCompressed is the largest count of the bound matrix: several chunks
// per block at its 4 KiB chunk size (fewer under the race detector).
func bigCompressed() int {
	if raceEnabled {
		return 10_003
	}
	return 40_003
}

func TestAllReduceCompressedBound(t *testing.T) {
	for _, c := range []collectives.Compression{collectives.CompressFloat16, collectives.CompressBFloat16} {
		for _, p := range []int{1, 2, 3, 5} {
			for _, n := range []int{0, 1, 7, 1000, bigCompressed()} {
				for _, op := range []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum} {
					name := fmt.Sprintf("%s/p%d/n%d/%s", c, p, n, op)
					t.Run(name, func(t *testing.T) {
						o := collectives.Options{PreMul: 0.25, ChunkBytes: 4096}
						compressedCase(t, p, n, c, op, n%2 == 1, o, 1e-2)
					})
				}
			}
		}
	}
}

// TestAllReduceCompressedRanges: float16 scaling keeps values far outside
// its range finite (1e8) and small gradients precise (1e-9), and the
// default chunk size with the concurrent pipeline.
func TestAllReduceCompressedRanges(t *testing.T) {
	for _, scale := range []float64{1e-9, 1, 1e8} {
		t.Run(fmt.Sprint(scale), func(t *testing.T) {
			n := 1<<18 + 5
			if raceEnabled {
				n = 1<<16 + 5
			}
			compressedCase(t, 2, n, collectives.CompressFloat16, reduce.Sum, false, collectives.Options{}, scale)
		})
	}
}

// TestAllReduceCompressedMatchesFloat32 compares with the uncompressed
// float32 all_reduce of the same inputs (the bound of a compressed result
// plus the float32 one's).
func TestAllReduceCompressedMatchesFloat32(t *testing.T) {
	const p, n = 4, 10_000
	inputs := make([][]float32, p)
	for r := range inputs {
		inputs[r] = gradientLike(rand.New(rand.NewPCG(99, uint64(r))), n, 1)
	}
	run := func(c collectives.Compression) []float32 {
		var out []byte
		noErrors(t, inWorld(t, p, func(ctx context.Context, ep transport.Endpoint) error {
			buf := putF32s(inputs[ep.Rank()])
			if ep.Rank() == 0 {
				out = buf
			}
			return collectives.AllReduceCompressed(ctx, ep, 1, buf, buf, reduce.Float32, reduce.Sum, c, collectives.Options{ChunkBytes: 1024})
		}))
		return getF32s(out)
	}
	full := run(collectives.NoCompression)
	for _, c := range []collectives.Compression{collectives.CompressFloat16, collectives.CompressBFloat16} {
		got := run(c)
		for i := range n {
			mag := 0.0
			for r := range p {
				mag += math.Abs(float64(inputs[r][i]))
			}
			bound := (p*c.UnitRoundoff() + 2*p*math.Pow(2, -24)) * mag
			require.LessOrEqual(t, math.Abs(float64(got[i]-full[i])), bound, "%s element %d", c, i)
		}
	}
}

func TestAllReduceCompressedInvalid(t *testing.T) {
	buf := make([]byte, 16)
	cases := []struct {
		name string
		dt   reduce.DType
		op   reduce.Op
		c    collectives.Compression
		o    collectives.Options
	}{
		{"int32", reduce.Int32, reduce.Sum, collectives.CompressFloat16, collectives.Options{}},
		{"float64", reduce.Float64, reduce.Sum, collectives.CompressFloat16, collectives.Options{}},
		{"max", reduce.Float32, reduce.Max, collectives.CompressBFloat16, collectives.Options{}},
		{"unknown format", reduce.Float32, reduce.Sum, "fp8", collectives.Options{}},
		{"rd", reduce.Float32, reduce.Sum, collectives.CompressFloat16, collectives.Options{Algo: collectives.RecursiveDoubling}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := inWorld(t, 1, func(ctx context.Context, ep transport.Endpoint) error {
				return collectives.AllReduceCompressed(ctx, ep, 1, buf, buf, c.dt, c.op, c.c, c.o)
			})
			require.ErrorIs(t, errs[0], collectives.ErrInvalidArgument)
		})
	}
}

func TestParseCompression(t *testing.T) {
	for in, want := range map[string]collectives.Compression{"": "none", "NONE": "none", "fp16": "fp16", " BF16 ": "bf16"} {
		got, err := collectives.ParseCompression(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := collectives.ParseCompression("int8")
	require.Error(t, err)
}
