package reduce

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReduceSemantics(t *testing.T) {
	tests := []struct {
		name string
		dt   DType
		op   Op
		a, b []byte
		want []byte
	}{
		{"int8 sum wraps", Int8, Sum, raw[int8](127, -128, 5), raw[int8](1, -1, -7), raw[int8](-128, 127, -2)},
		{"int8 prod wraps", Int8, Prod, raw[int8](16, -128, -3), raw[int8](16, -1, 5), raw[int8](0, -128, -15)},
		{"int8 max min", Int8, Max, raw[int8](-128, 127, 0), raw[int8](127, -128, 0), raw[int8](127, 127, 0)},
		{"int8 min", Int8, Min, raw[int8](-128, 127, 3), raw[int8](127, -128, 2), raw[int8](-128, -128, 2)},
		{"uint8 sum wraps", Uint8, Sum, raw[uint8](255, 200), raw[uint8](1, 100), raw[uint8](0, 44)},
		{"uint8 max unsigned", Uint8, Max, raw[uint8](255, 0), raw[uint8](1, 128), raw[uint8](255, 128)},
		{"uint8 bitwise and", Uint8, Band, raw[uint8](0xf0, 0xff), raw[uint8](0x3c, 0x0f), raw[uint8](0x30, 0x0f)},
		{"uint8 bitwise or", Uint8, Bor, raw[uint8](0xf0, 0x00), raw[uint8](0x3c, 0x0f), raw[uint8](0xfc, 0x0f)},
		{"uint8 bitwise xor", Uint8, Bxor, raw[uint8](0xf0, 0xff), raw[uint8](0x3c, 0x0f), raw[uint8](0xcc, 0xf0)},
		{"int16 sum wraps", Int16, Sum, raw[int16](32767, -5), raw[int16](1, 3), raw[int16](-32768, -2)},
		{"int16 xor", Int16, Bxor, raw[int16](-1, 0x0ff0), raw[int16](0x00ff, 0x0f0f), raw[int16](-256, 0x00ff)},
		{"uint16 sum wraps", Uint16, Sum, raw[uint16](65535, 5), raw[uint16](1, 3), raw[uint16](0, 8)},
		{"uint16 max is unsigned", Uint16, Max, raw[uint16](0x8000, 1), raw[uint16](1, 0xffff), raw[uint16](0x8000, 0xffff)},
		{"int32 sum wraps", Int32, Sum, raw[int32](math.MaxInt32, -1), raw[int32](1, -2), raw[int32](math.MinInt32, -3)},
		{"int32 prod", Int32, Prod, raw[int32](65536, -7), raw[int32](65536, 6), raw[int32](0, -42)},
		{"uint32 max unsigned", Uint32, Max, raw[uint32](math.MaxUint32, 3), raw[uint32](1, 4), raw[uint32](math.MaxUint32, 4)},
		{"uint32 min unsigned", Uint32, Min, raw[uint32](math.MaxUint32, 3), raw[uint32](1, 4), raw[uint32](1, 3)},
		{"int64 sum wraps", Int64, Sum, raw[int64](math.MaxInt64), raw[int64](1), raw[int64](math.MinInt64)},
		{"int64 max", Int64, Max, raw[int64](math.MinInt64, 9), raw[int64](math.MaxInt64, -9), raw[int64](math.MaxInt64, 9)},
		{"uint64 sum wraps", Uint64, Sum, raw[uint64](math.MaxUint64), raw[uint64](2), raw[uint64](1)},
		{"uint64 or", Uint64, Bor, raw[uint64](1 << 63), raw[uint64](1), raw[uint64](1<<63 | 1)},
		{"float32 sum", Float32, Sum, raw[float32](1.5, inf32, -inf32, negz32), raw[float32](2.25, 1, inf32, negz32), raw[float32](3.75, inf32, nan32, negz32)},
		{"float32 avg is sum", Float32, Avg, raw[float32](1.5), raw[float32](2), raw[float32](3.5)},
		{"float32 premul is sum", Float32, PreMulSum, raw[float32](1.5), raw[float32](2), raw[float32](3.5)},
		{"float32 prod", Float32, Prod, raw[float32](3, inf32), raw[float32](-0.5, 0), raw[float32](-1.5, nan32)},
		{"float32 max", Float32, Max, raw[float32](nan32, 1, negz32, 0, negz32, -inf32), raw[float32](1, nan32, 0, negz32, negz32, -3), raw[float32](nan32, nan32, 0, 0, negz32, -3)},
		{"float32 min", Float32, Min, raw[float32](nan32, 1, negz32, 0, 0, inf32), raw[float32](1, nan32, 0, negz32, 0, 3), raw[float32](nan32, nan32, negz32, negz32, 0, 3)},
		{"float64 sum", Float64, Sum, raw(point1, 1e308), raw(point2, 1e308), raw(point1+point2, inf64)},
		{"float64 max", Float64, Max, raw(nan64, negz64, 2.0), raw(1.0, 0.0, -2.0), raw(nan64, 0.0, 2.0)},
		{"float64 min", Float64, Min, raw(1.0, 0.0, 2.0), raw(nan64, negz64, -2.0), raw(nan64, negz64, -2.0)},
		// 1 + 2^-11 is halfway between 1 and 1+2^-10: ties to even (1);
		// (1+2^-10) + 2^-11 ties to even the other way (1+2^-9).
		{"float16 sum ties to even", Float16, Sum, f16s(1, 1+0x1p-10, 65504, 0x1p-24), f16s(0x1p-11, 0x1p-11, 16, 0x1p-24), f16s(1, 1+0x1p-9, math.Inf(1), 0x1p-23)},
		{"float16 sum overflow rounds down below 65520", Float16, Sum, f16s(65504), f16s(8), f16s(65504)},
		{"float16 prod rounded once", Float16, Prod, f16s(1+0x1p-10, -3), f16s(1+0x1p-10, 0.5), f16s(1+0x1p-9, -1.5)},
		{"float16 max nan", Float16, Max, raw[uint16](0x7e00, 0x3c00, 0x8000), raw[uint16](0x3c00, 0x7e00, 0x0000), raw[uint16](0x7e00, 0x7e00, 0x0000)},
		{"bfloat16 sum ties to even", BFloat16, Sum, bf16s(1, 1+0x1p-7, 3e38), bf16s(0x1p-8, 0x1p-8, 3e38), bf16s(1, 1+0x1p-6, math.Inf(1))},
		{"bfloat16 min", BFloat16, Min, bf16s(1, -2), bf16s(-1, 2), bf16s(-1, -2)},
		{"bool sum is or", Bool, Sum, raw[uint8](0, 0, 1, 2), raw[uint8](0, 3, 0, 2), raw[uint8](0, 1, 1, 1)},
		{"bool max is or", Bool, Max, raw[uint8](0, 0, 1, 2), raw[uint8](0, 3, 0, 2), raw[uint8](0, 1, 1, 1)},
		{"bool bor", Bool, Bor, raw[uint8](0, 0, 1, 2), raw[uint8](0, 3, 0, 2), raw[uint8](0, 1, 1, 1)},
		{"bool prod is and", Bool, Prod, raw[uint8](0, 0, 1, 2), raw[uint8](0, 3, 0, 4), raw[uint8](0, 0, 0, 1)},
		{"bool min is and", Bool, Min, raw[uint8](0, 0, 1, 2), raw[uint8](0, 3, 0, 4), raw[uint8](0, 0, 0, 1)},
		{"bool band", Bool, Band, raw[uint8](0, 0, 1, 2), raw[uint8](0, 3, 0, 4), raw[uint8](0, 0, 0, 1)},
		{"bool xor", Bool, Bxor, raw[uint8](0, 0, 1, 2), raw[uint8](0, 3, 0, 4), raw[uint8](0, 1, 1, 0)},
		{"invalid float bitwise is a no-op", Float32, Band, raw[float32](1), raw[float32](2), raw[float32](1)},
		{"invalid bool avg is a no-op", Bool, Avg, raw[uint8](0), raw[uint8](1), raw[uint8](0)},
		{"invalid dtype is a no-op", DType(99), Sum, raw[uint8](1), raw[uint8](1), raw[uint8](1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := append([]byte(nil), tc.a...)
			Reduce(tc.dt, tc.op, dst, tc.b)
			assert.Equal(t, canonNaN(tc.dt, tc.want), canonNaN(tc.dt, dst), "Reduce")

			dst = make([]byte, len(tc.a))
			copy(dst, tc.a)
			Reduce3(tc.dt, tc.op, dst, tc.a, tc.b)
			assert.Equal(t, canonNaN(tc.dt, tc.want), canonNaN(tc.dt, dst), "Reduce3")
		})
	}
}

func TestReduce3Aliasing(t *testing.T) {
	a := raw[int32](1, 2, 3)
	b := raw[int32](10, 20, 30)
	Reduce3(Int32, Sum, b, a, b) // dst aliases b
	require.Equal(t, raw[int32](11, 22, 33), b)
	Reduce3(Int32, Sum, a, a, a) // everything aliased
	require.Equal(t, raw[int32](2, 4, 6), a)
}

func TestReduceLengthMismatchIsSafe(t *testing.T) {
	dst := raw[int32](1, 2, 3)
	Reduce(Int32, Sum, dst, raw[int32](1)) // only the common element
	assert.Equal(t, raw[int32](2, 2, 3), dst)
	Reduce(Int32, Sum, dst[:3], dst[:3]) // a trailing partial element is ignored
	assert.Equal(t, raw[int32](2, 2, 3), dst)
	Reduce(Int32, Sum, nil, nil)
}

func TestScale(t *testing.T) {
	tests := []struct {
		name   string
		dt     DType
		src    []byte
		factor float64
		want   []byte
	}{
		{"float32", Float32, raw[float32](1.5, -2, inf32), 0.5, raw[float32](0.75, -1, inf32)},
		{"float64", Float64, raw(0.1, 3.0), 3, raw(point1*3, 9.0)},
		// 1+2^-10 times 1+2^-10 is 1+2^-9+2^-20: rounds to 1+2^-9.
		{"float16 rounds once", Float16, f16s(1+0x1p-10, 60000), 1 + 0x1p-10, f16s(1+0x1p-9, 60064)},
		{"float16 overflows to inf", Float16, f16s(60000), 2, f16s(math.Inf(1))},
		{"bfloat16", BFloat16, bf16s(3, -1), 0.25, bf16s(0.75, -0.25)},
		{"int32 truncates toward zero", Int32, raw[int32](7, -7, 5), 0.5, raw[int32](3, -3, 2)},
		{"int8 saturates", Int8, raw[int8](100, -100, 1), 2, raw[int8](127, -128, 2)},
		{"uint8 saturates at zero", Uint8, raw[uint8](100, 3), -1, raw[uint8](0, 0)},
		{"int64 nan gives zero", Int64, raw[int64](5), math.NaN(), raw[int64](0)},
		{"uint64 saturates", Uint64, raw[uint64](math.MaxUint64/2 + 1), 4, raw[uint64](math.MaxUint64)},
		{"int64 saturates", Int64, raw[int64](math.MinInt64, math.MaxInt64), 2, raw[int64](math.MinInt64, math.MaxInt64)},
		{"bool", Bool, raw[uint8](0, 1, 5), 0.5, raw[uint8](0, 1, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]byte, len(tc.src))
			Scale(tc.dt, dst, tc.src, tc.factor)
			assert.Equal(t, tc.want, dst)
			inPlace := append([]byte(nil), tc.src...)
			Scale(tc.dt, inPlace, inPlace, tc.factor)
			assert.Equal(t, tc.want, inPlace, "in place")
		})
	}
}

func TestDivideBy(t *testing.T) {
	tests := []struct {
		name string
		dt   DType
		buf  []byte
		n    int
		want []byte
	}{
		{"float32", Float32, raw[float32](1, -3, inf32), 4, raw[float32](0.25, -0.75, inf32)},
		{"float32 own precision", Float32, raw[float32](1), 3, raw[float32](float32(1) / 3)},
		{"float64", Float64, raw(1.0), 3, raw(1.0 / 3)},
		{"float16 via float32 rounded once", Float16, f16s(1, 2050), 3, raw(f32ToF16(float32(1)/3), f32ToF16(float32(2050)/3))},
		{"bfloat16", BFloat16, bf16s(1, -6), 2, bf16s(0.5, -3)},
		{"int32 truncates toward zero", Int32, raw[int32](7, -7, math.MinInt32), 2, raw[int32](3, -3, math.MinInt32/2)},
		{"int8 by more than its range", Int8, raw[int8](-128, 127), 300, raw[int8](0, 0)},
		{"uint8", Uint8, raw[uint8](255, 3), 2, raw[uint8](127, 1)},
		{"uint64", Uint64, raw[uint64](math.MaxUint64), 2, raw[uint64](math.MaxUint64 / 2)},
		{"int64", Int64, raw[int64](math.MinInt64), 3, raw[int64](math.MinInt64 / 3)},
		{"n=0 is a no-op", Int32, raw[int32](7), 0, raw[int32](7)},
		{"bool is a no-op", Bool, raw[uint8](1), 2, raw[uint8](1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := append([]byte(nil), tc.buf...)
			DivideBy(tc.dt, buf, tc.n)
			assert.Equal(t, tc.want, buf)
		})
	}
}

func TestReduceFloat32From16(t *testing.T) {
	acc := raw[float32](1, 1, 5, -1)
	ReduceFloat32From16(Float16, Sum, acc, f16s(0x1p-11, 0x1p-24, 1, 2))
	// No rounding to 16 bits: 1 + 2^-11 survives in the float32 accumulator.
	assert.Equal(t, raw[float32](1+0x1p-11, 1+0x1p-24, 6, 1), acc)

	acc = raw[float32](1, nan32)
	ReduceFloat32From16(BFloat16, Max, acc, bf16s(2, 0))
	got := view[float32](acc)
	assert.Equal(t, float32(2), got[0])
	assert.True(t, math.IsNaN(float64(got[1])))

	acc = raw[float32](3)
	ReduceFloat32From16(Float32, Sum, acc, raw[uint16](0x3c00)) // not a 16-bit type: no-op
	assert.Equal(t, raw[float32](3), acc)
}

// The public entry points (which pick Go or C by size) agree with the Go
// kernels on buffers large enough for C.
func TestPublicMatchesGoOnLargeBuffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, dt := range AllDTypes {
		for _, op := range AllOps {
			if Check(dt, op) != nil {
				continue
			}
			a := make([]byte, 4099*dt.Size())
			b := make([]byte, len(a))
			for i := range a {
				a[i], b[i] = byte(rng.Uint32()), byte(rng.Uint32())
			}
			want := make([]byte, len(a))
			reduceGo(dt, op, want, a, b)
			Reduce(dt, op, a, b)
			require.Equal(t, canonNaN(dt, want), canonNaN(dt, a), "%s %s", dt, op)
		}
	}
}
