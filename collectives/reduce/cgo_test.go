//go:build cgo

package reduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testLengths = []int{0, 1, 7, 33, 1000, 4099} // in elements

func TestHostISA(t *testing.T) {
	t.Logf("host instruction-set level: %d (0 generic, 1 AVX2, 2 AVX-512)", hostISA)
	require.NotEmpty(t, isaLevels)
}

// Special bit patterns mixed into random data.
var specials = map[DType][]uint64{
	Float32: {0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345, 0x7f800000, 0xff800000, 0, 0x80000000,
		1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000,
		0x3f801000, 0x477ff000, 0x33000000, 0x387fe000, 0x7f7f8000},
	Float64: {0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0x7ff0000000000000,
		0xfff0000000000000, 0, 1 << 63, 1, 0x000fffffffffffff, 0x7fefffffffffffff, 0x3ff0000000000000},
	Float16: {0x7e00, 0xfe00, 0x7c01, 0x7d00, 0xfd55, 0x7c00, 0xfc00, 0, 0x8000, 1, 0x8001, 0x03ff,
		0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3c01, 0x1000},
	BFloat16: {0x7fc0, 0xffc0, 0x7f81, 0xff85, 0x7f80, 0xff80, 0, 0x8000, 1, 0x8001, 0x007f, 0x0080,
		0x7f7f, 0xff7f, 0x3f80, 0x3f81},
	Int8:   {0x80, 0x7f, 0xff, 0, 1},
	Uint8:  {0xff, 0, 1, 0x80, 0x7f},
	Int16:  {0x8000, 0x7fff, 0xffff, 0, 1},
	Uint16: {0xffff, 0, 1, 0x8000},
	Int32:  {0x80000000, 0x7fffffff, 0xffffffff, 0, 1},
	Uint32: {0xffffffff, 0, 1, 0x80000000},
	Int64:  {1 << 63, 1<<63 - 1, math.MaxUint64, 0, 1},
	Uint64: {math.MaxUint64, 0, 1, 1 << 63},
	Bool:   {0, 1, 2, 0xff},
}

// randomBuf returns n elements of dt, about a third of them special values,
// starting at byte offset off of the returned slice's backing array.
func randomBuf(rng *rand.Rand, dt DType, n, off int) []byte {
	size := dt.Size()
	b := make([]byte, off+n*size)[off:]
	for i := 0; i < n; i++ {
		v := rng.Uint64()
		if sp := specials[dt]; rng.IntN(3) == 0 {
			v = sp[rng.IntN(len(sp))]
		} else if dt == Bool {
			v %= 2
		}
		for k := 0; k < size; k++ {
			b[i*size+k] = byte(v >> (8 * k))
		}
	}
	return b
}

func isNaNAt(dt DType, b []byte, i int) bool {
	switch dt {
	case Float32:
		return math.IsNaN(float64(view[float32](b)[i]))
	case Float64:
		return math.IsNaN(view[float64](b)[i])
	case Float16:
		return view[uint16](b)[i]&0x7fff > 0x7c00
	case BFloat16:
		return view[uint16](b)[i]&0x7fff > 0x7f80
	}
	return false
}

// requireSame requires got == want bit for bit, except that where both
// operands are NaN the result need only be some NaN: which operand's payload
// wins is up to the compiler's operand order, in Go and in C.
func requireSame(t *testing.T, dt DType, want, got, a, b []byte, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	size := dt.Size()
	for i := 0; i < len(want)/size; i++ {
		w, g := want[i*size:(i+1)*size], got[i*size:(i+1)*size]
		if string(w) == string(g) {
			continue
		}
		if isNaNAt(dt, want, i) && isNaNAt(dt, got, i) && isNaNAt(dt, a, i) && isNaNAt(dt, b, i) {
			continue
		}
		require.Failf(t, "C and Go differ", "%s: element %d: a=%x b=%x go=%x c=%x",
			what, i, a[i*size:(i+1)*size], b[i*size:(i+1)*size], w, g)
	}
}

func TestCReduceMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, isa := range isaLevels {
		for _, dt := range AllDTypes {
			for _, op := range AllOps {
				if Check(dt, op) != nil {
					continue
				}
				for _, n := range testLengths {
					what := fmt.Sprintf("isa %d %s %s n=%d", isa, dt, op, n)
					a := randomBuf(rng, dt, n, rng.IntN(8))
					b := randomBuf(rng, dt, n, rng.IntN(8))

					want := randomBuf(rng, dt, n, rng.IntN(8))
					reduceGo(dt, op, want, a, b)
					got := randomBuf(rng, dt, n, rng.IntN(8))
					require.True(t, cReduceAt(isa, dt, op, got, a, b), what)
					requireSame(t, dt, want, got, a, b, what)

					// In place, as Reduce does (dst aliases a), and dst aliasing b.
					inA := append([]byte(nil), a...)
					require.True(t, cReduceAt(isa, dt, op, inA, inA, b), what)
					requireSame(t, dt, want, inA, a, b, what+" dst=a")
					inB := append([]byte(nil), b...)
					require.True(t, cReduceAt(isa, dt, op, inB, a, inB), what)
					requireSame(t, dt, want, inB, a, b, what+" dst=b")
				}
			}
		}
	}
}

func TestCInvalidPairIsNotHandled(t *testing.T) {
	for _, isa := range isaLevels {
		dst := raw[float32](1, 2)
		assert.False(t, cReduceAt(isa, Float32, Band, dst, dst, dst))
		cReduceAt(isa, DType(42), Sum, dst, dst, dst) // size 0: nothing to do
		assert.False(t, cReduceAt(isa, Float32, Op(42), dst, dst, dst))
		assert.Equal(t, raw[float32](1, 2), dst)
	}
}

func TestCFrom16MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, isa := range isaLevels {
		for _, dt := range []DType{Float16, BFloat16} {
			for _, op := range []Op{Sum, Prod, Max, Min, Avg, PreMulSum} {
				for _, n := range testLengths {
					what := fmt.Sprintf("isa %d %s %s n=%d", isa, dt, op, n)
					acc := randomBuf(rng, Float32, n, rng.IntN(8))
					src := randomBuf(rng, dt, n, rng.IntN(8))
					want := append([]byte(nil), acc...)
					reduceFrom16Go(dt, op, want, src)
					got := append([]byte(nil), acc...)
					require.True(t, cReduceFrom16At(isa, dt, op, got, src), what)
					wide := make([]byte, 4*n)
					widenGo(map[DType]func(uint16) float32{Float16: f16ToF32, BFloat16: bf16ToF32}[dt], wide, src)
					requireSame(t, Float32, want, got, acc, wide, what)
				}
			}
		}
	}
}

func TestCScaleAndDivideMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	factors := []float64{0.5, 1.0 / 3, -2.5, 1e-30, 1e30, 0, math.Inf(1), math.NaN()}
	for _, isa := range isaLevels {
		for _, dt := range []DType{Float32, Float64, Float16, BFloat16} {
			for _, n := range testLengths {
				src := randomBuf(rng, dt, n, rng.IntN(8))
				for _, f := range factors {
					what := fmt.Sprintf("isa %d scale %s n=%d by %g", isa, dt, n, f)
					want := make([]byte, len(src))
					scaleGo(dt, want, src, f)
					got := randomBuf(rng, dt, n, rng.IntN(8))
					require.True(t, cScaleAt(isa, dt, got, src, f), what)
					requireSame(t, dt, want, got, src, src, what)
				}
				for _, div := range []int{1, 2, 3, 7, 1000} {
					what := fmt.Sprintf("isa %d divide %s n=%d by %d", isa, dt, n, div)
					want := append([]byte(nil), src...)
					divideGo(dt, want, div)
					got := append([]byte(nil), src...)
					require.True(t, cDivideByAt(isa, dt, got, div), what)
					requireSame(t, dt, want, got, src, src, what)
				}
			}
		}
		// Integer scaling and division stay in Go (saturation, truncation).
		assert.False(t, cScaleAt(isa, Int32, make([]byte, 4), make([]byte, 4), 2))
		assert.False(t, cDivideByAt(isa, Int32, make([]byte, 4), 2))
	}
}

func TestCConvertMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	// Every 16-bit pattern widens identically.
	all := make([]byte, 2<<16)
	for i := range 1 << 16 {
		view[uint16](all)[i] = uint16(i)
	}
	for _, isa := range isaLevels {
		for _, h := range []struct {
			dt     DType
			wide   func(uint16) float32
			narrow func(float32) uint16
		}{{Float16, f16ToF32, f32ToF16}, {BFloat16, bf16ToF32, f32ToBF16}} {
			want, got := make([]byte, 4<<16), make([]byte, 4<<16)
			widenGo(h.wide, want, all)
			require.True(t, cConvertAt(isa, h.dt, Float32, got, all))
			require.Equal(t, want, got, "isa %d widen %s", isa, h.dt)

			for _, n := range append(testLengths, 1<<16) {
				src := randomBuf(rng, Float32, n, rng.IntN(8))
				if n == 1<<16 { // the float32 values right around each 16-bit one
					for i := range n {
						w := math.Float32bits(h.wide(uint16(i)))
						view[uint32](src)[i] = w + uint32(rng.IntN(1<<14)) - 1<<13
					}
				}
				what := fmt.Sprintf("isa %d narrow %s n=%d", isa, h.dt, n)
				want, got := make([]byte, 2*n), make([]byte, 2*n)
				narrowGo(h.narrow, want, src)
				require.True(t, cConvertAt(isa, Float32, h.dt, got, src), what)
				require.Equal(t, want, got, what)
			}
		}
	}
}
