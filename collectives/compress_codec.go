package collectives

import (
	"encoding/binary"
	"math"
	"time"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// A wire chunk of a compressed all_reduce is a 4-byte header, the chunk's
// scale exponent e as a little-endian int32, followed by the 16-bit
// encodings of x·2^e for its float32 values x. bfloat16 always uses e = 0;
// float16 picks e per chunk from the chunk's largest magnitude.
const (
	wireHeader = 4
	wireElem   = 2
	f32Size    = 4
)

// wireBytes is the size of the wire chunk for n float32 values.
func wireBytes(n int) int { return wireHeader + wireElem*n }

// fp16Top is the binary exponent that the largest magnitude of a float16
// chunk is scaled to: it lands in [2^14, 2^15), below float16's largest
// finite value 65504 even after rounding up, and as high as it can be so
// that small values keep their precision.
const fp16Top = 14

// Scale exponents stay where 2^e is a normal float32.
const minScaleExp, maxScaleExp = -126, 127

// wireCodec encodes float32 chunks into wire chunks and back. It is
// stateless; callers pass a float32 scratch buffer of the chunk's size.
type wireCodec struct {
	dt reduce.DType // Float16 or BFloat16: the element type on the wire
}

func newWireCodec(c Compression) wireCodec {
	if c == CompressBFloat16 {
		return wireCodec{dt: reduce.BFloat16}
	}
	return wireCodec{dt: reduce.Float16}
}

// encode writes src (float32) into the wire chunk w (wireBytes(len(src)/4)
// bytes). scratch holds at least len(src) bytes.
func (c wireCodec) encode(w, src, scratch []byte) {
	e := 0
	if c.dt == reduce.Float16 {
		e = scaleExponent(maxAbsBits(src))
	}
	binary.LittleEndian.PutUint32(w, uint32(int32(e)))
	if e != 0 {
		scratch = scratch[:len(src)]
		reduce.Scale(reduce.Float32, scratch, src, math.Ldexp(1, e)) // exact: a power of two
		src = scratch
	}
	if c.dt == reduce.Float16 {
		reduce.Float32ToFloat16(w[wireHeader:], src)
	} else {
		reduce.Float32ToBFloat16(w[wireHeader:], src)
	}
}

// decode writes the float32 values of wire chunk w into dst.
func (c wireCodec) decode(dst, w []byte) {
	c.widen(dst, w[wireHeader:])
	if e := chunkExponent(w); e != 0 {
		reduce.Scale(reduce.Float32, dst, dst, math.Ldexp(1, -e))
	}
}

// decodeAdd computes dst = with + decode(w) in float32 (dst may be with).
// scratch holds at least len(dst) bytes.
func (c wireCodec) decodeAdd(dst, with, w, scratch []byte) {
	if e := chunkExponent(w); e != 0 {
		scratch = scratch[:len(dst)]
		c.decode(scratch, w)
		reduce.Reduce3(reduce.Float32, reduce.Sum, dst, with, scratch)
		return
	}
	args.CopyUnlessSame(dst, with)
	reduce.ReduceFloat32From16(c.dt, reduce.Sum, dst, w[wireHeader:])
}

func (c wireCodec) widen(dst, src []byte) {
	if c.dt == reduce.Float16 {
		reduce.Float16ToFloat32(dst, src)
	} else {
		reduce.BFloat16ToFloat32(dst, src)
	}
}

// chunkExponent reads a wire chunk's scale exponent, clamped to the range
// encode writes (a corrupt header cannot make Ldexp overflow).
func chunkExponent(w []byte) int {
	e := int(int32(binary.LittleEndian.Uint32(w)))
	return min(max(e, minScaleExp), maxScaleExp)
}

// scaleExponent returns e such that a float32 magnitude with bits m (sign
// cleared) times 2^e lies in [2^fp16Top, 2^(fp16Top+1)). Zero, inf and NaN
// give 0: nothing to scale, or nothing scaling could save.
func scaleExponent(m uint32) int {
	const expMask = 0x7f800000
	if m == 0 || m >= expMask {
		return 0
	}
	exp := int(m>>23) - 127
	if m < 1<<23 { // subnormal: 2^-149 <= m < 2^-126
		exp = -127
	}
	return min(max(fp16Top-exp, minScaleExp), maxScaleExp)
}

// maxAbsBits returns the largest |x| of a float32 buffer as raw bits.
// Without the sign bit the bit patterns of floats order like their
// magnitudes, and any inf or NaN compares above every finite value.
func maxAbsBits(b []byte) uint32 {
	n := len(b) / f32Size
	if n == 0 {
		return 0
	}
	// The buffers are chunks of float32 arrays: 4-byte aligned.
	u := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), n)
	var m0, m1, m2, m3 uint32
	i := 0
	for ; i+4 <= n; i += 4 {
		m0 = max(m0, u[i]&0x7fffffff)
		m1 = max(m1, u[i+1]&0x7fffffff)
		m2 = max(m2, u[i+2]&0x7fffffff)
		m3 = max(m3, u[i+3]&0x7fffffff)
	}
	for ; i < n; i++ {
		m0 = max(m0, u[i]&0x7fffffff)
	}
	return max(m0, m1, m2, m3)
}

// MeasureCodec times encoding n bytes of float32 into c's wire format and
// decoding them back on this core (best of 3) and returns the speed in
// bytes of float32 per second per pass, for the cost model. 0 for
// NoCompression.
func MeasureCodec(c Compression, n int) float64 {
	if c == NoCompression || c == "" || n < f32Size {
		return 0
	}
	n -= n % f32Size
	src, dst, scratch := make([]byte, n), make([]byte, n), make([]byte, n)
	for i := 0; i < n; i += f32Size {
		// Gradient-like values, so that fp16 scales the chunk.
		binary.LittleEndian.PutUint32(src[i:], math.Float32bits(float32(i%977)*1e-5))
	}
	codec := newWireCodec(c)
	w := make([]byte, wireBytes(n/f32Size))
	var best time.Duration
	for i := range 3 {
		start := time.Now()
		codec.encode(w, src, scratch)
		codec.decode(dst, w)
		if d := time.Since(start); i == 0 || d < best {
			best = d
		}
	}
	return 2 * float64(n) / max(best, time.Microsecond).Seconds()
}
