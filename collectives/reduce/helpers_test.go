package reduce

import (
	"math"
	"unsafe"
)

// raw returns the native-layout bytes of vals.
func raw[T any](vals ...T) []byte {
	if len(vals) == 0 {
		return []byte{}
	}
	var zero T
	b := unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), len(vals)*int(unsafe.Sizeof(zero)))
	return append([]byte(nil), b...)
}

// f16s and bf16s encode float64 values (exact in float32) as 16-bit floats.
func f16s(vals ...float64) []byte {
	out := make([]uint16, len(vals))
	for i, v := range vals {
		out[i] = f32ToF16(float32(v))
	}
	return raw(out...)
}

func bf16s(vals ...float64) []byte {
	out := make([]uint16, len(vals))
	for i, v := range vals {
		out[i] = f32ToBF16(float32(v))
	}
	return raw(out...)
}

var (
	nan32  = float32(math.NaN())
	inf32  = float32(math.Inf(1))
	negz32 = float32(math.Copysign(0, -1))
	nan64  = math.NaN()
	inf64  = math.Inf(1)
	negz64 = math.Copysign(0, -1)
)

// point1 is a variable so that point1*3 is computed in float64, not exactly.
var point1 = 0.1

// point2 is a variable for the same reason as point1.
var point2 = 0.2

// canonNaN returns a copy of b (elements of dt) with every NaN replaced by
// one canonical pattern: kernels guarantee a NaN, not which one.
func canonNaN(dt DType, b []byte) []byte {
	out := append([]byte(nil), b...)
	switch dt {
	case Float32:
		for i, v := range view[float32](out) {
			if v != v {
				view[uint32](out)[i] = 0x7fc00000
			}
		}
	case Float64:
		for i, v := range view[float64](out) {
			if v != v {
				view[uint64](out)[i] = 0x7ff8000000000000
			}
		}
	case Float16:
		for i, v := range view[uint16](out) {
			if v&0x7fff > 0x7c00 {
				view[uint16](out)[i] = 0x7e00
			}
		}
	case BFloat16:
		for i, v := range view[uint16](out) {
			if v&0x7fff > 0x7f80 {
				view[uint16](out)[i] = 0x7fc0
			}
		}
	}
	return out
}
