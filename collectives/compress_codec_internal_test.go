package collectives

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

func f32Bytes(xs ...float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func f32Values(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.NativeEndian.Uint32(b[4*i:]))
	}
	return xs
}

func TestScaleExponent(t *testing.T) {
	bits := func(x float32) uint32 { return math.Float32bits(x) &^ (1 << 31) }
	cases := []struct {
		name string
		m    uint32
		want int
	}{
		{"zero", 0, 0},
		{"one", bits(1), fp16Top},
		{"just below two", bits(1.999), fp16Top},
		{"fp16 max", bits(65504), fp16Top - 15},
		{"large", bits(3e38), fp16Top - 127},
		{"gradient-sized", bits(1e-3), fp16Top + 10}, // 1e-3 = 1.024 * 2^-10
		{"smallest normal", bits(math.Float32frombits(1 << 23)), maxScaleExp},
		{"subnormal", 1, maxScaleExp},
		{"inf", bits(float32(math.Inf(1))), 0},
		{"nan", 0x7fc00000, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, scaleExponent(c.m))
		})
	}
}

func TestMaxAbsBits(t *testing.T) {
	assert.Equal(t, uint32(0), maxAbsBits(nil))
	assert.Equal(t, math.Float32bits(7), maxAbsBits(f32Bytes(1, -7, 3, 2, 0.5)))
	assert.Equal(t, math.Float32bits(9), maxAbsBits(f32Bytes(1, 2, 3, 4, 5, 6, 7, 8, -9))) // the tail loop
	assert.GreaterOrEqual(t, maxAbsBits(f32Bytes(1, float32(math.NaN()))), uint32(0x7f800000))
}

// TestCodecRoundTrip checks one rounding against its bound: relative error
// at most u for values within 2^-28 of the chunk's largest magnitude (float16
// keeps them normal after scaling), and no overflow for values far beyond
// float16's range.
func TestCodecRoundTrip(t *testing.T) {
	for _, c := range []Compression{CompressFloat16, CompressBFloat16} {
		for _, top := range []float32{1e-7, 1e-3, 1, 1e4, 1e9, 1e30} {
			t.Run(fmt.Sprintf("%s/%g", c, top), func(t *testing.T) {
				codec := newWireCodec(c)
				xs := []float32{top, -top, top / 3, top / 1000, -top / 77777, top * 0.99, 0}
				src := f32Bytes(xs...)
				w := make([]byte, wireBytes(len(xs)))
				scratch := make([]byte, len(src))
				codec.encode(w, src, scratch)
				got := make([]byte, len(src))
				codec.decode(got, w)
				for i, y := range f32Values(got) {
					x := float64(xs[i])
					require.False(t, math.IsInf(float64(y), 0), "top %g: %g overflowed", top, x)
					assert.LessOrEqual(t, math.Abs(float64(y)-x), c.UnitRoundoff()*math.Abs(x), "top %g: x=%g got %g", top, x, y)
				}
				// decodeAdd equals decode then a float32 addition.
				with := f32Bytes(1, 2, 3, 4, 5, 6, 7)
				sum := make([]byte, len(src))
				codec.decodeAdd(sum, with, w, scratch)
				for i, s := range f32Values(sum) {
					assert.Equal(t, f32Values(with)[i]+f32Values(got)[i], s)
				}
			})
		}
	}
}

// TestCodecKeepsSpecials: inf and NaN travel (no scale is applied to them).
func TestCodecKeepsSpecials(t *testing.T) {
	codec := newWireCodec(CompressFloat16)
	src := f32Bytes(1, float32(math.Inf(-1)), float32(math.NaN()))
	w := make([]byte, wireBytes(3))
	codec.encode(w, src, make([]byte, len(src)))
	got := f32Values(func() []byte { b := make([]byte, len(src)); codec.decode(b, w); return b }())
	assert.Equal(t, float32(1), got[0])
	assert.True(t, math.IsInf(float64(got[1]), -1))
	assert.True(t, math.IsNaN(float64(got[2])))
}

func TestChunkExponentClamps(t *testing.T) {
	w := make([]byte, wireHeader)
	neg := int32(-5000)
	binary.LittleEndian.PutUint32(w, uint32(neg))
	assert.Equal(t, minScaleExp, chunkExponent(w))
	binary.LittleEndian.PutUint32(w, 5000)
	assert.Equal(t, maxScaleExp, chunkExponent(w))
}

func TestWireLayout(t *testing.T) {
	bl := evenBlocks(10, f32Size, 3) // 4, 3, 3 elements
	l := newWireLayout(bl, 2)
	assert.Equal(t, []int{2, 2, 2}, []int{l.chunks(0), l.chunks(1), l.chunks(2)})
	wire := make([]byte, l.total)
	assert.Len(t, l.wire(wire, 0, 1), wireBytes(2))
	assert.Len(t, l.wire(wire, 1, 1), wireBytes(1))
	assert.Equal(t, 6*wireBytes(2), l.total)
	assert.Equal(t, reduce.Float16, newWireCodec(CompressFloat16).dt)
}
