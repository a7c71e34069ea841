package inplace

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/symm"
	"github.com/hccl-go/hccl-go/transport/symm/symmtest"
)

// windows allocates bytes of symmetric memory on p goroutine ranks.
func windows(t *testing.T, p, bytes int) []*symm.Window { return symmtest.Windows(t, p, bytes) }

func each(p int, f func(r int) error) []error {
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r := range p {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r) }()
	}
	wg.Wait()
	return errs
}

// fill writes rank r's count random elements of dt at buf: small integers
// (powers of two for Prod) for integer-valued reductions, normal floats
// otherwise.
func fill(dt reduce.DType, op reduce.Op, buf []byte, r int) {
	rng := rand.New(rand.NewPCG(uint64(len(buf)), uint64(r)))
	es := dt.Size()
	for i := 0; i+es <= len(buf); i += es {
		v := float64(rng.IntN(7) - 3)
		if op == reduce.Prod {
			v = float64(int(1) << rng.IntN(2))
		}
		switch dt {
		case reduce.Float32:
			binary.NativeEndian.PutUint32(buf[i:], math.Float32bits(float32(rng.NormFloat64())))
		case reduce.Float64:
			binary.NativeEndian.PutUint64(buf[i:], math.Float64bits(v))
		case reduce.BFloat16:
			binary.NativeEndian.PutUint16(buf[i:], uint16(math.Float32bits(float32(v))>>16))
		case reduce.Int32:
			binary.NativeEndian.PutUint32(buf[i:], uint32(int32(v)))
		default:
			buf[i] = byte(rng.IntN(256))
		}
	}
}

// reference folds the inputs in rank order, then divides for Avg.
func reference(dt reduce.DType, op reduce.Op, inputs [][]byte) []byte {
	acc := slices.Clone(inputs[0])
	for _, in := range inputs[1:] {
		reduce.Reduce(dt, op, acc, in)
	}
	if op == reduce.Avg {
		reduce.DivideBy(dt, acc, len(inputs))
	}
	return acc
}

// TestAllReduce: every rank ends with the rank-order reduction, bit for
// bit, in place and out of place, at 1 to 4 ranks, for sizes 0, 1, counts
// the ranks do not divide and several chunks, with the rest of every
// region untouched.
func TestAllReduce(t *testing.T) {
	cases := []struct {
		dt reduce.DType
		op reduce.Op
	}{{reduce.Float32, reduce.Sum}, {reduce.Float64, reduce.Avg}, {reduce.BFloat16, reduce.Max}, {reduce.Int32, reduce.Prod}, {reduce.Uint8, reduce.Bxor}, {reduce.Bool, reduce.Min}}
	const region = 256 << 10
	for p := 1; p <= 4; p++ {
		ws := windows(t, p, region)
		var seq uint64
		for _, tc := range cases {
			es := tc.dt.Size()
			for _, count := range []int{0, 1, 7, 1031, 3*chunkBytes/es + 5} {
				for _, inPlace := range []bool{true, false} {
					t.Run(fmt.Sprintf("p%d/%s/%s/%d/inplace=%v", p, tc.dt, tc.op, count, inPlace), func(t *testing.T) {
						n := count * es
						sendOff, recvOff := es, es
						if !inPlace {
							recvOff = region - n - es
						}
						inputs := make([][]byte, p)
						before := make([][]byte, p)
						for r, w := range ws {
							reg, err := w.Region(r)
							require.NoError(t, err)
							for i := range reg {
								reg[i] = byte(i*7 + r) // garbage around the spans
							}
							fill(tc.dt, tc.op, reg[sendOff:sendOff+n], r)
							inputs[r] = slices.Clone(reg[sendOff : sendOff+n])
							before[r] = slices.Clone(reg)
						}
						want := reference(tc.dt, tc.op, inputs)
						seq++
						errs := each(p, func(r int) error {
							return AllReduce(context.Background(), ws[r], 0, seq, sendOff, recvOff, n, tc.dt, tc.op, 10*time.Second)
						})
						for r, err := range errs {
							require.NoError(t, err, "rank %d", r)
						}
						for r, w := range ws {
							reg, _ := w.Region(r)
							require.Equal(t, want, reg[recvOff:recvOff+n], "rank %d's result", r)
							after := slices.Clone(reg)
							copy(after[recvOff:recvOff+n], before[r][recvOff:recvOff+n])
							assert.True(t, slices.Equal(before[r], after), "rank %d: bytes outside its output changed", r)
						}
					})
				}
			}
		}
	}
}

// TestAllReduceMismatch: ranks that describe the op differently fail
// alike, naming the rank that differs, and the window stays usable.
func TestAllReduceMismatch(t *testing.T) {
	ws := windows(t, 2, 4096)
	errs := each(2, func(r int) error {
		return AllReduce(context.Background(), ws[r], 1, 1, 0, 0, 64*(r+1), reduce.Float32, reduce.Sum, 5*time.Second)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, symm.ErrMismatch, "rank %d", r)
		assert.ErrorContains(t, err, fmt.Sprintf("rank %d describes it", 1-r))
	}
	errs = each(2, func(r int) error {
		return AllReduce(context.Background(), ws[r], 1, 2, 0, 0, 64, reduce.Float32, reduce.Sum, 5*time.Second)
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d: the next op on the channel", r)
	}
}

// TestAllReducePeerAbsent: a rank whose peer never enters fails within
// its timeout, naming the peer.
func TestAllReducePeerAbsent(t *testing.T) {
	ws := windows(t, 2, 4096)
	start := time.Now()
	err := AllReduce(context.Background(), ws[0], 2, 1, 0, 0, 64, reduce.Float32, reduce.Sum, 200*time.Millisecond)
	require.ErrorIs(t, err, symm.ErrTimeout)
	assert.ErrorContains(t, err, "waited for rank 1")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// TestAllReduceRefusesBadSpans: overlapping or out-of-region spans and
// PreMulSum are refused before any barrier.
func TestAllReduceRefusesBadSpans(t *testing.T) {
	ws := windows(t, 1, 4096)
	for _, c := range []struct{ send, recv, n int }{{0, 4, 64}, {4000, 4000, 200}, {-4, -4, 8}, {1, 1, 8}} {
		err := AllReduce(context.Background(), ws[0], 0, 1, c.send, c.recv, c.n, reduce.Float32, reduce.Sum, time.Second)
		require.ErrorIs(t, err, symm.ErrInvalid, "%+v", c)
	}
	require.ErrorIs(t, AllReduce(context.Background(), ws[0], 0, 1, 0, 0, 8, reduce.Float32, reduce.PreMulSum, time.Second), symm.ErrInvalid)
}

// TestReduceScatter: rank r ends with the rank-order reduction of block r
// of every rank's input, bit for bit, into an ordinary buffer and into its
// own block of its input; every input byte outside that block is
// untouched.
func TestReduceScatter(t *testing.T) {
	cases := []struct {
		dt reduce.DType
		op reduce.Op
	}{{reduce.Float32, reduce.Sum}, {reduce.Float64, reduce.Avg}, {reduce.BFloat16, reduce.Max}, {reduce.Int32, reduce.Prod}}
	for p := 1; p <= 4; p++ {
		ws := windows(t, p, 512<<10)
		var seq uint64
		for _, tc := range cases {
			es := tc.dt.Size()
			for _, count := range []int{0, 1, 7, 2*chunkBytes/es + 3} {
				for _, own := range []bool{true, false} {
					t.Run(fmt.Sprintf("p%d/%s/%s/%d/own=%v", p, tc.dt, tc.op, count, own), func(t *testing.T) {
						n, sendOff := count*es, 2*es
						inputs := make([][]byte, p)
						for r, w := range ws {
							reg, err := w.Region(r)
							require.NoError(t, err)
							fill(tc.dt, tc.op, reg[sendOff:sendOff+p*n], r)
							inputs[r] = slices.Clone(reg[sendOff : sendOff+p*n])
						}
						want := reference(tc.dt, tc.op, inputs)
						outs := make([][]byte, p)
						for r, w := range ws {
							if own {
								reg, _ := w.Region(r)
								outs[r] = reg[sendOff+r*n : sendOff+(r+1)*n]
							} else {
								outs[r] = make([]byte, n)
							}
						}
						seq++
						errs := each(p, func(r int) error {
							return ReduceScatter(context.Background(), ws[r], 3, seq, sendOff, outs[r], tc.dt, tc.op, 10*time.Second)
						})
						for r, err := range errs {
							require.NoError(t, err, "rank %d", r)
						}
						for r, w := range ws {
							require.Equal(t, want[r*n:(r+1)*n], outs[r], "rank %d's block", r)
							reg, _ := w.Region(r)
							after := slices.Clone(reg[sendOff : sendOff+p*n])
							copy(after[r*n:(r+1)*n], inputs[r][r*n:(r+1)*n])
							assert.True(t, slices.Equal(inputs[r], after), "rank %d: input bytes of other blocks changed", r)
						}
					})
				}
			}
		}
	}
}
