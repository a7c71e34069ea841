package reduce

import (
	"math"
	"unsafe"
)

// Pure-Go versions of Scale and DivideBy (see scale.go for the semantics).

func scaleGo(dt DType, dst, src []byte, factor float64) {
	n := common(dt.Size(), dst, src) * dt.Size()
	dst, src = dst[:n], src[:n]
	switch dt {
	case Int8:
		scaleInts(view[int8](dst), view[int8](src), factor)
	case Uint8:
		scaleInts(view[uint8](dst), view[uint8](src), factor)
	case Int16:
		scaleInts(view[int16](dst), view[int16](src), factor)
	case Uint16:
		scaleInts(view[uint16](dst), view[uint16](src), factor)
	case Int32:
		scaleInts(view[int32](dst), view[int32](src), factor)
	case Uint32:
		scaleInts(view[uint32](dst), view[uint32](src), factor)
	case Int64:
		scaleInts(view[int64](dst), view[int64](src), factor)
	case Uint64:
		scaleInts(view[uint64](dst), view[uint64](src), factor)
	case Float32:
		mulFloats(view[float32](dst), view[float32](src), float32(factor))
	case Float64:
		mulFloats(view[float64](dst), view[float64](src), factor)
	case Float16:
		mulHalves(f16ToF32, f32ToF16, view[uint16](dst), view[uint16](src), float32(factor))
	case BFloat16:
		mulHalves(bf16ToF32, f32ToBF16, view[uint16](dst), view[uint16](src), float32(factor))
	case Bool:
		for i := range dst {
			dst[i] = truth(src[i] != 0 && factor != 0)
		}
	}
}

func divideGo(dt DType, buf []byte, n int) {
	if n <= 0 {
		return
	}
	buf = buf[:len(buf)/max(dt.Size(), 1)*dt.Size()]
	switch dt {
	case Int8:
		divSigned(view[int8](buf), n)
	case Uint8:
		divUnsigned(view[uint8](buf), n)
	case Int16:
		divSigned(view[int16](buf), n)
	case Uint16:
		divUnsigned(view[uint16](buf), n)
	case Int32:
		divSigned(view[int32](buf), n)
	case Uint32:
		divUnsigned(view[uint32](buf), n)
	case Int64:
		divSigned(view[int64](buf), n)
	case Uint64:
		divUnsigned(view[uint64](buf), n)
	case Float32:
		divFloats(view[float32](buf), float32(n))
	case Float64:
		divFloats(view[float64](buf), float64(n))
	case Float16:
		divHalves(f16ToF32, f32ToF16, view[uint16](buf), float32(n))
	case BFloat16:
		divHalves(bf16ToF32, f32ToBF16, view[uint16](buf), float32(n))
	}
}

// scaleInts multiplies in float64 and converts back truncating toward zero;
// NaN becomes 0 and out-of-range results saturate at the type's limits.
func scaleInts[T integer](d, s []T, factor float64) {
	lo, hi := intRange[T]()
	s = s[:len(d)]
	for i := range d {
		d[i] = floatToInt[T](float64(s[i])*factor, lo, hi)
	}
}

// intRange returns T's smallest value and 2^(bits of magnitude), the first
// float64 above T's largest value; both are exact in float64.
func intRange[T integer]() (lo, hiExcl float64) {
	var zero T
	bits := 8 * int(unsafe.Sizeof(zero))
	if ^zero < 0 { // signed
		return -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)
	}
	return 0, math.Ldexp(1, bits)
}

// floatToInt truncates x toward zero into T, saturating; NaN gives 0.
func floatToInt[T integer](x, lo, hiExcl float64) T {
	switch {
	case x != x:
		return 0
	case x <= lo:
		var zero T
		if ^zero < 0 {
			return ^zero << (8*unsafe.Sizeof(zero) - 1) // minimum
		}
		return 0
	case x >= hiExcl:
		var zero T
		if ^zero < 0 {
			return ^(^zero << (8*unsafe.Sizeof(zero) - 1)) // maximum
		}
		return ^zero
	}
	return T(x) // Go truncates toward zero; in range here
}

func mulFloats[T float](d, s []T, f T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = s[i] * f
	}
}

func mulHalves(wide func(uint16) float32, narrow func(float32) uint16, d, s []uint16, f float32) {
	s = s[:len(d)]
	for i := range d {
		d[i] = narrow(wide(s[i]) * f)
	}
}

func divSigned[T integer](d []T, n int) {
	for i := range d {
		d[i] = T(int64(d[i]) / int64(n)) // Go's / truncates toward zero
	}
}

func divUnsigned[T integer](d []T, n int) {
	for i := range d {
		d[i] = T(uint64(d[i]) / uint64(n))
	}
}

func divFloats[T float](d []T, n T) {
	for i := range d {
		d[i] /= n
	}
}

func divHalves(wide func(uint16) float32, narrow func(float32) uint16, d []uint16, n float32) {
	for i := range d {
		d[i] = narrow(wide(d[i]) / n)
	}
}
