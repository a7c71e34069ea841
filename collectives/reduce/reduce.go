package reduce

// Public kernel entry points. Each runs the pure-Go kernel for small buffers
// and the C kernel (when built with cgo) from useC's threshold on, where
// the cost of a cgo call (~50-250 ns) is repaid. Both give bitwise
// identical results, except which NaN comes out when both operands are NaN.
//
// Callers validate (dt, op) with Check first. On an invalid pair the kernels
// do nothing: they never panic. Buffers are raw bytes in native layout and
// need no alignment. If lengths disagree, only the common prefix of whole
// elements is processed.

// useC reports whether a call on n bytes of dt should go to the C kernels.
// Measured on a 2-vCPU AVX-512 VM: the pure-Go 16-bit float kernels run at
// ~1 GB/s, so C wins from ~128 bytes; for the other types Go runs at
// ~4 GB/s and C wins from ~512 bytes.
func useC(dt DType, n int) bool {
	if dt == Float16 || dt == BFloat16 {
		return n >= 128
	}
	return n >= 512
}

// Reduce computes dst[i] = dst[i] op src[i] elementwise.
//
// Avg and PreMulSum reduce as Sum: their scaling is done by DivideBy and
// Scale. Integer arithmetic wraps; floating-point Max/Min propagate NaN (like
// torch.maximum/minimum) and order -0 below +0; float16 and bfloat16 are
// computed in float32 and rounded once to nearest-even. Bool treats non-zero
// as true and writes 0/1: Sum/Max/Bor are or, Prod/Min/Band are and, Bxor xor.
func Reduce(dt DType, op Op, dst, src []byte) {
	Reduce3(dt, op, dst, dst, src)
}

// Reduce3 computes dst[i] = a[i] op b[i] elementwise, with the semantics of
// Reduce. dst may alias a or b exactly (not partially overlap them).
func Reduce3(dt DType, op Op, dst, a, b []byte) {
	if Check(dt, op) != nil {
		return
	}
	if useC(dt, len(dst)) && cReduce(dt, op, dst, a, b) {
		return
	}
	reduceGo(dt, op, dst, a, b)
}

// ReduceFloat32From16 accumulates a 16-bit buffer into a float32 buffer:
// dst[i] = dst[i] op float32(src[i]), with dt Float16 or BFloat16 naming the
// type of src. It lets a compressed (16-bit) wire buffer be reduced into a
// full-precision accumulator without rounding. Other dtypes do nothing.
func ReduceFloat32From16(dt DType, op Op, dst, src []byte) {
	if (dt != Float16 && dt != BFloat16) || Check(dt, op) != nil {
		return
	}
	if useC(dt, len(src)) && cReduceFrom16(dt, op, dst, src) {
		return
	}
	reduceFrom16Go(dt, op, dst, src)
}
