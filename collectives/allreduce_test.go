package collectives_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

var allReduceAlgos = []collectives.Algorithm{collectives.Ring, collectives.RecursiveDoubling, collectives.HalvingDoubling}

// TestAllReduceExact runs every world size x algorithm x dtype x valid op x
// count on exactly reducible data and requires every rank to hold the
// reference's very bits.
func TestAllReduceExact(t *testing.T) {
	for _, p := range worlds {
		for ai, algo := range allReduceAlgos {
			for _, dt := range testDTypes() {
				for _, op := range validOps(dt) {
					for _, n := range counts(p) {
						if n == bigCount && !bigCaseFor(dt, op, p, ai) {
							continue
						}
						name := fmt.Sprintf("p%d/%s/%s/%s/n%d", p, algoName(algo), dt, op, n)
						t.Run(name, func(t *testing.T) {
							checkAllReduce(t, name, p, dt, op, n, collectives.Options{Algo: algo, PreMul: exactPreMul}, false)
						})
					}
				}
			}
		}
	}
}

// TestAllReduceInPlace passes the same buffer as send and recv.
func TestAllReduceInPlace(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4, 8} {
		for _, algo := range append(allReduceAlgos, collectives.Auto) {
			for _, dt := range []reduce.DType{reduce.Int32, reduce.Float32, reduce.BFloat16} {
				for _, op := range []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum, reduce.Max} {
					for _, n := range []int{0, 1, p + 1, 1000, 40000} {
						if raceEnabled && n > 1000 && dt != reduce.Int32 {
							continue
						}
						name := fmt.Sprintf("p%d/%s/%s/%s/n%d", p, algoName(algo), dt, op, n)
						t.Run(name, func(t *testing.T) {
							checkAllReduce(t, name, p, dt, op, n, collectives.Options{Algo: algo, PreMul: exactPreMul}, true)
						})
					}
				}
			}
		}
	}
}

// TestAllReducePipelined uses small chunks and buffers above the pipelining
// threshold, so the sender and receiver goroutines run concurrently over
// many chunks, with blocks that do not divide evenly. For halving-doubling
// the small chunks also make its steps overlap (ranges passed on in the
// order of their next step).
func TestAllReducePipelined(t *testing.T) {
	for _, p := range []int{2, 3, 4, 5, 8} {
		for _, chunk := range []int{1, 4096, 100000} {
			for _, inPlace := range []bool{false, true} {
				for _, algo := range []collectives.Algorithm{collectives.Ring, collectives.HalvingDoubling} {
					name := fmt.Sprintf("p%d/%s/chunk%d/inplace=%v", p, algoName(algo), chunk, inPlace)
					n := 70001
					switch {
					case chunk == 1 && raceEnabled:
						n = 601
					case chunk == 1:
						n = 3001 // one message per element
					case raceEnabled:
						n = 20001 // still above the threshold of the concurrent pipeline
					}
					t.Run(name, func(t *testing.T) {
						o := collectives.Options{Algo: algo, ChunkBytes: chunk}
						checkAllReduce(t, name, p, reduce.Int32, reduce.Sum, n, o, inPlace)
						checkAllReduce(t, name, p, reduce.Float16, reduce.Avg, n, o, inPlace)
					})
				}
			}
		}
	}
}

func checkAllReduce(t *testing.T, name string, p int, dt reduce.DType, op reduce.Op, n int, o collectives.Options, inPlace bool) {
	t.Helper()
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = exactInput(newRNG(seedOf(name), r), dt, op, n)
	}
	want := reference(dt, op, o.PreMul, inputs)
	sends, recvs := make([][]byte, p), make([][]byte, p)
	for r := range p {
		sends[r] = append([]byte(nil), inputs[r]...)
		recvs[r] = sends[r]
		if !inPlace {
			recvs[r] = garbage(len(sends[r]))
		}
	}
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		return collectives.AllReduce(ctx, ep, testTag, sends[r], recvs[r], dt, op, o)
	}))
	for r := range p {
		requireSameBytes(t, want, recvs[r], "rank %d result", r)
		if !inPlace {
			requireSameBytes(t, inputs[r], sends[r], "rank %d send buffer modified", r)
		}
	}
}

// garbage returns a buffer whose bytes a correct collective overwrites.
func garbage(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xA5
	}
	return b
}

// TestAllReduceFloatDeterminism reduces random floats, where the order of
// the reduction changes the rounding: every rank must hold the same bits,
// a second run must give the same bits again, and the result must be
// within the rounding error bound of the exact float64 result.
func TestAllReduceFloatDeterminism(t *testing.T) {
	floatTypes := []reduce.DType{reduce.Float16, reduce.BFloat16, reduce.Float32, reduce.Float64}
	ops := []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum, reduce.Prod}
	for _, p := range []int{2, 3, 4, 5, 6, 8} {
		for _, algo := range append(allReduceAlgos, collectives.Auto) {
			for _, dt := range floatTypes {
				for _, op := range ops {
					for _, n := range []int{1000, 50001} {
						if raceEnabled && (n > 1000 || p == 6) {
							continue
						}
						name := fmt.Sprintf("p%d/%s/%s/%s/n%d", p, algoName(algo), dt, op, n)
						t.Run(name, func(t *testing.T) {
							o := collectives.Options{Algo: algo, PreMul: 0.3, ChunkBytes: 8192}
							inputs := make([][]byte, p)
							for r := range p {
								inputs[r] = randomFloats(newRNG(seedOf(name), r), dt, op, n)
							}
							first := allReduceOutputs(t, inputs, dt, op, o)
							for r := 1; r < p; r++ {
								requireSameBytes(t, first[0], first[r], "rank %d differs from rank 0", r)
							}
							again := allReduceOutputs(t, inputs, dt, op, o)
							requireSameBytes(t, first[0], again[0], "second run differs")
							want, tol := floatReference(dt, op, o.PreMul, inputs)
							got := floats(dt, first[0])
							for i := range want {
								if d := got[i] - want[i]; d > tol[i] || -d > tol[i] {
									t.Fatalf("element %d: got %g, want %g within %g", i, got[i], want[i], tol[i])
								}
							}
						})
					}
				}
			}
		}
	}
}

func allReduceOutputs(t *testing.T, inputs [][]byte, dt reduce.DType, op reduce.Op, o collectives.Options) [][]byte {
	t.Helper()
	p := len(inputs)
	outs := make([][]byte, p)
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		outs[r] = make([]byte, len(inputs[r]))
		return collectives.AllReduce(ctx, ep, testTag, inputs[r], outs[r], dt, op, o)
	}))
	return outs
}

// TestAllReduceInvalidPairs: every (dtype, op) that reduce.Check rejects is
// an invalid-argument error on every rank, without any communication.
func TestAllReduceInvalidPairs(t *testing.T) {
	for _, pair := range invalidPairs() {
		dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
		t.Run(fmt.Sprintf("%s/%s", dt, op), func(t *testing.T) {
			errs := runRanks(t, 2, func(ctx context.Context, ep transport.Endpoint) error {
				buf := make([]byte, 8*dt.Size())
				return collectives.AllReduce(ctx, ep, testTag, buf, buf, dt, op, collectives.Options{})
			})
			for r, err := range errs {
				require.ErrorIs(t, err, collectives.ErrInvalidArgument, "rank %d", r)
				assert.Contains(t, err.Error(), op.String())
			}
		})
	}
}

func TestChooseAllReduce(t *testing.T) {
	tests := []struct {
		size, nbytes int
		want         collectives.Algorithm
	}{
		{1, 1 << 30, collectives.Ring},
		{2, 0, collectives.RecursiveDoubling},
		{2, 8, collectives.RecursiveDoubling},
		{2, 16 << 10, collectives.RecursiveDoubling},
		{2, 64 << 10, collectives.Ring},
		{3, 1 << 10, collectives.RecursiveDoubling},
		{3, 64 << 10, collectives.Ring},
		{4, 32 << 10, collectives.HalvingDoubling},
		{8, 64 << 10, collectives.HalvingDoubling},
		{8, 16 << 20, collectives.Ring},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, collectives.ChooseAllReduce(tt.size, tt.nbytes), "size %d nbytes %d", tt.size, tt.nbytes)
	}
}
