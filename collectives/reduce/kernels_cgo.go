//go:build cgo

package reduce

// #cgo CFLAGS: -O3 -std=c11 -Wall
// // The kernels never call back into Go and keep no pointer (see kernels.h).
// #cgo noescape hg_reduce
// #cgo nocallback hg_reduce
// #cgo noescape hg_reduce_from16
// #cgo nocallback hg_reduce_from16
// #cgo noescape hg_scale
// #cgo nocallback hg_scale
// #cgo noescape hg_divide
// #cgo nocallback hg_divide
// #cgo noescape hg_convert
// #cgo nocallback hg_convert
// #include "kernels.h"
import "C"

import "unsafe"

// The C kernels (kernels_*.c) are compiled for several instruction-set
// levels; hostISA is the best this machine supports, found once at start-up
// and never changed. The C code never calls into Go and keeps no pointer
// after returning, so passing slices of Go memory is within the cgo rules.

var hostISA = int(C.hg_best_isa())

// isaLevels lists the levels this host can run, for tests and benchmarks.
var isaLevels = func() []int {
	levels := make([]int, 0, hostISA+1)
	for l := 0; l <= hostISA; l++ {
		levels = append(levels, l)
	}
	return levels
}()

// The C enums must equal the Go values (types.go is the ABI): each index
// below is a compile error unless it is 0.
type zeroIndex = [1]struct{}

var _ = [...]struct{}{
	zeroIndex{}[C.HG_INT8-int(Int8)], zeroIndex{}[C.HG_UINT8-int(Uint8)], zeroIndex{}[C.HG_INT16-int(Int16)],
	zeroIndex{}[C.HG_INT32-int(Int32)], zeroIndex{}[C.HG_UINT32-int(Uint32)], zeroIndex{}[C.HG_INT64-int(Int64)],
	zeroIndex{}[C.HG_UINT64-int(Uint64)], zeroIndex{}[C.HG_FLOAT16-int(Float16)], zeroIndex{}[C.HG_FLOAT32-int(Float32)],
	zeroIndex{}[C.HG_FLOAT64-int(Float64)], zeroIndex{}[C.HG_BFLOAT16-int(BFloat16)], zeroIndex{}[C.HG_BOOL-int(Bool)], zeroIndex{}[C.HG_UINT16-int(Uint16)],
	zeroIndex{}[C.HG_SUM-int(Sum)], zeroIndex{}[C.HG_PROD-int(Prod)], zeroIndex{}[C.HG_MAX-int(Max)], zeroIndex{}[C.HG_MIN-int(Min)],
	zeroIndex{}[C.HG_AVG-int(Avg)], zeroIndex{}[C.HG_PREMULSUM-int(PreMulSum)], zeroIndex{}[C.HG_BAND-int(Band)],
	zeroIndex{}[C.HG_BOR-int(Bor)], zeroIndex{}[C.HG_BXOR-int(Bxor)],
}

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func cReduce(dt DType, op Op, dst, a, b []byte) bool {
	return cReduceAt(hostISA, dt, op, dst, a, b)
}

func cReduceAt(isa int, dt DType, op Op, dst, a, b []byte) bool {
	n := common(dt.Size(), dst, a, b) * dt.Size()
	if n == 0 {
		return true
	}
	return C.hg_reduce(C.int(isa), C.int(dt), C.int(op), ptr(dst), ptr(a), ptr(b), C.size_t(n)) != 0
}

func cReduceFrom16(dt DType, op Op, dst, src []byte) bool {
	return cReduceFrom16At(hostISA, dt, op, dst, src)
}

func cReduceFrom16At(isa int, dt DType, op Op, dst, src []byte) bool {
	n := min(len(dst)/4, len(src)/2) * 2 // src bytes
	if n == 0 {
		return true
	}
	return C.hg_reduce_from16(C.int(isa), C.int(dt), C.int(op), ptr(dst), ptr(src), C.size_t(n)) != 0
}

func cScale(dt DType, dst, src []byte, factor float64) bool {
	return cScaleAt(hostISA, dt, dst, src, factor)
}

func cScaleAt(isa int, dt DType, dst, src []byte, factor float64) bool {
	n := common(dt.Size(), dst, src) * dt.Size()
	if n == 0 {
		return true
	}
	return C.hg_scale(C.int(isa), C.int(dt), ptr(dst), ptr(src), C.double(factor), C.size_t(n)) != 0
}

func cDivideBy(dt DType, buf []byte, n int) bool {
	return cDivideByAt(hostISA, dt, buf, n)
}

func cDivideByAt(isa int, dt DType, buf []byte, n int) bool {
	nb := len(buf) / max(dt.Size(), 1) * dt.Size()
	if nb == 0 {
		return true
	}
	return C.hg_divide(C.int(isa), C.int(dt), ptr(buf), C.long(n), C.size_t(nb)) != 0
}

func cConvert(from, to DType, dst, src []byte) bool {
	return cConvertAt(hostISA, from, to, dst, src)
}

func cConvertAt(isa int, from, to DType, dst, src []byte) bool {
	n := min(len(dst)/to.Size(), len(src)/from.Size()) * from.Size() // src bytes
	if n == 0 {
		return true
	}
	return C.hg_convert(C.int(isa), C.int(from), C.int(to), ptr(dst), ptr(src), C.size_t(n)) != 0
}
