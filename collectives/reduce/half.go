package reduce

import (
	"math"
	"math/bits"
)

// Scalar conversions between float32 and the two 16-bit float formats.
//
// These are the reference (pure-Go) conversions; the C kernels implement the
// same rules bit for bit:
//   - float32 -> 16 bit rounds to nearest, ties to even; values too large for
//     the target become ±inf; NaN stays NaN with its sign kept, the quiet bit
//     set and the top payload bits kept (what x86 F16C does).
//   - 16 bit -> float32 is exact; a NaN keeps its sign and payload, with the
//     quiet bit set for float16 (as F16C does).

// f16ToF32 widens an IEEE 754 binary16 value to float32 exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f && man == 0: // ±inf
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0x1f: // NaN: quieten, keep the payload
		return math.Float32frombits(sign | 0x7fc00000 | man<<13)
	case exp == 0 && man == 0: // ±0
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise the significand
		shift := uint32(bits.LeadingZeros32(man) - 21) // brings bit 10 up
		e := 127 - 15 + 1 - shift
		return math.Float32frombits(sign | e<<23 | (man<<shift&0x3ff)<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	}
}

// f32ToF16 narrows a float32 to binary16, rounding to nearest, ties to even.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 { // NaN: quiet bit set, top 10 payload bits kept
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased binary16 exponent
	if e >= 0x1f {
		return sign | 0x7c00 // overflow before rounding
	}
	if e <= 0 {
		// Subnormal result (or zero). The value is m * 2^(e-38) with the
		// implicit bit restored; in units of 2^-24 (the smallest binary16
		// subnormal) that is m >> (14 - e).
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		m := man | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 != 0) {
			h++ // may carry into the smallest normal, which is right
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 != 0) {
		h++ // a carry into the exponent is right, up to and including inf
	}
	return sign | uint16(h)
}

// bf16ToF32 widens a bfloat16 to float32 exactly (a NaN is kept as is).
func bf16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// f32ToBF16 narrows a float32 to bfloat16, rounding to nearest, ties to even.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep sign and top payload, quieten
		return uint16(b>>16) | 0x0040
	}
	// Adding 0x7fff plus the lowest kept bit rounds ties to even; a carry
	// out of the mantissa correctly bumps the exponent (up to inf).
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
