//go:build cgo

package reduce

// #cgo noescape hg_reduce_dup
// #cgo nocallback hg_reduce_dup
// #include "kernels_dup.h"
import "C"

func cReduceDup(dt DType, op Op, dst, dup, a, b []byte) bool {
	return cReduceDupAt(hostISA, dt, op, dst, dup, a, b)
}

func cReduceDupAt(isa int, dt DType, op Op, dst, dup, a, b []byte) bool {
	n := common(dt.Size(), dst, dup, a, b) * dt.Size()
	if n == 0 {
		return true
	}
	return C.hg_reduce_dup(C.int(isa), C.int(dt), C.int(op), ptr(dst), ptr(dup), ptr(a), ptr(b), C.size_t(n)) != 0
}
