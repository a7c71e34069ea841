package reduce

// Pure-Go kernels. They define the semantics; the C kernels (kernels_*.c)
// must agree with them bit for bit (see cgo_test.go).

type integer interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type float interface{ ~float32 | ~float64 }

// reduceGo computes dst[i] = a[i] op b[i] over the first n elements of type
// dt. dst may alias a or b. An invalid (dt, op) pair leaves dst untouched.
func reduceGo(dt DType, op Op, dst, a, b []byte) {
	n := common(dt.Size(), dst, a, b) * dt.Size()
	dst, a, b = dst[:n], a[:n], b[:n]
	switch dt {
	case Int8:
		reduceInts(op, view[int8](dst), view[int8](a), view[int8](b))
	case Uint8:
		reduceInts(op, view[uint8](dst), view[uint8](a), view[uint8](b))
	case Int16:
		reduceInts(op, view[int16](dst), view[int16](a), view[int16](b))
	case Uint16:
		reduceInts(op, view[uint16](dst), view[uint16](a), view[uint16](b))
	case Int32:
		reduceInts(op, view[int32](dst), view[int32](a), view[int32](b))
	case Uint32:
		reduceInts(op, view[uint32](dst), view[uint32](a), view[uint32](b))
	case Int64:
		reduceInts(op, view[int64](dst), view[int64](a), view[int64](b))
	case Uint64:
		reduceInts(op, view[uint64](dst), view[uint64](a), view[uint64](b))
	case Float32:
		reduceFloats(op, view[float32](dst), view[float32](a), view[float32](b))
	case Float64:
		reduceFloats(op, view[float64](dst), view[float64](a), view[float64](b))
	case Float16:
		reduceF16(op, view[uint16](dst), view[uint16](a), view[uint16](b))
	case BFloat16:
		reduceBF16(op, view[uint16](dst), view[uint16](a), view[uint16](b))
	case Bool:
		reduceBools(op, dst, a, b)
	}
}

// reduceInts applies op with wrapping (two's complement) arithmetic.
func reduceInts[T integer](op Op, d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case Sum, Avg, PreMulSum:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case Prod:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	case Max:
		for i := range d {
			d[i] = max(a[i], b[i])
		}
	case Min:
		for i := range d {
			d[i] = min(a[i], b[i])
		}
	case Band:
		for i := range d {
			d[i] = a[i] & b[i]
		}
	case Bor:
		for i := range d {
			d[i] = a[i] | b[i]
		}
	case Bxor:
		for i := range d {
			d[i] = a[i] ^ b[i]
		}
	}
}

// reduceFloats applies an arithmetic op; bitwise ops are invalid for floats
// and leave d untouched.
func reduceFloats[T float](op Op, d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case Sum, Avg, PreMulSum:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case Prod:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	case Max:
		for i := range d {
			d[i] = fmax(a[i], b[i])
		}
	case Min:
		for i := range d {
			d[i] = fmin(a[i], b[i])
		}
	}
}

// fmax is the maximum that propagates NaN (like torch.maximum): a NaN a is
// returned as is, else a NaN b; of two zeros the result is +0 unless both
// are -0, so the operation is commutative except for which NaN wins.
func fmax[T float](a, b T) T {
	switch {
	case a != a:
		return a
	case b != b:
		return b
	case a > b:
		return a
	case a < b:
		return b
	case a == 0:
		return a + b // +0 unless both are -0
	default:
		return a
	}
}

// fmin mirrors fmax: NaN propagates, and of two zeros the result is -0
// unless both are +0.
func fmin[T float](a, b T) T {
	switch {
	case a != a:
		return a
	case b != b:
		return b
	case a < b:
		return a
	case a > b:
		return b
	case a == 0:
		return -(-a - b) // -0 unless both are +0
	default:
		return a
	}
}

// reduceF16 and reduceBF16 apply op to 16-bit floats: both operands are
// widened to float32, op is applied in float32, and the result is rounded
// once. (Two copies rather than one generic function, so that the
// conversions are inlined: Go does not inline calls through type parameters.)
func reduceF16(op Op, d, a, b []uint16) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case Sum, Avg, PreMulSum:
		for i := range d {
			d[i] = f32ToF16(f16ToF32(a[i]) + f16ToF32(b[i]))
		}
	case Prod:
		for i := range d {
			d[i] = f32ToF16(f16ToF32(a[i]) * f16ToF32(b[i]))
		}
	case Max:
		for i := range d {
			d[i] = f32ToF16(fmax(f16ToF32(a[i]), f16ToF32(b[i])))
		}
	case Min:
		for i := range d {
			d[i] = f32ToF16(fmin(f16ToF32(a[i]), f16ToF32(b[i])))
		}
	}
}

func reduceBF16(op Op, d, a, b []uint16) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case Sum, Avg, PreMulSum:
		for i := range d {
			d[i] = f32ToBF16(bf16ToF32(a[i]) + bf16ToF32(b[i]))
		}
	case Prod:
		for i := range d {
			d[i] = f32ToBF16(bf16ToF32(a[i]) * bf16ToF32(b[i]))
		}
	case Max:
		for i := range d {
			d[i] = f32ToBF16(fmax(bf16ToF32(a[i]), bf16ToF32(b[i])))
		}
	case Min:
		for i := range d {
			d[i] = f32ToBF16(fmin(bf16ToF32(a[i]), bf16ToF32(b[i])))
		}
	}
}

// reduceBools treats any non-zero byte as true and always writes 0 or 1:
// Sum, Max and Bor are logical or; Prod, Min and Band logical and; Bxor is
// exclusive or. Avg and PreMulSum are invalid for bool and do nothing.
func reduceBools(op Op, d, a, b []byte) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case Sum, Max, Bor:
		for i := range d {
			d[i] = truth(a[i]|b[i] != 0)
		}
	case Prod, Min, Band:
		for i := range d {
			d[i] = truth(a[i] != 0 && b[i] != 0)
		}
	case Bxor:
		for i := range d {
			d[i] = truth((a[i] != 0) != (b[i] != 0))
		}
	}
}

func truth(v bool) byte {
	if v {
		return 1
	}
	return 0
}
