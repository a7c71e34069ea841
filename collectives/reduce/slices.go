package reduce

import "unsafe"

// view reinterprets a byte buffer in native layout as a slice of T, dropping
// a trailing partial element. The buffer need not be aligned: every platform
// Go supports for this library (amd64, arm64) allows unaligned loads.
func view[T any](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// common returns the length, in whole elements of size, that three buffers
// share. Kernels process exactly that prefix, so a caller's length mismatch
// cannot make them read or write out of bounds.
func common(size int, bufs ...[]byte) int {
	if size <= 0 {
		return 0
	}
	n := -1
	for _, b := range bufs {
		if n < 0 || len(b) < n {
			n = len(b)
		}
	}
	return n / size
}
