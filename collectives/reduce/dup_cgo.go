//go:build cgo

package reduce

// #cgo noescape hg_reduce_dup_div
// #cgo nocallback hg_reduce_dup_div
// #include "kernels_dup.h"
import "C"

func cReduceDupDivide(dt DType, op Op, dst, dup, a, b []byte, divisor int) bool {
	return cReduceDupDivideAt(hostISA, dt, op, dst, dup, a, b, divisor)
}

func cReduceDupDivideAt(isa int, dt DType, op Op, dst, dup, a, b []byte, divisor int) bool {
	n := common(dt.Size(), dst, dup, a, b) * dt.Size()
	if n == 0 {
		return true
	}
	return C.hg_reduce_dup_div(C.int(isa), C.int(dt), C.int(op), ptr(dst), ptr(dup), ptr(a), ptr(b), C.size_t(n), C.long(divisor)) != 0
}
