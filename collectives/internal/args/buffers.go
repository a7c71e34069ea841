package args

import "unsafe"

// span returns the address range [lo, hi) of b; empty slices have none.
func span(b []byte) (lo, hi uintptr) {
	if len(b) == 0 {
		return 0, 0
	}
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return lo, lo + uintptr(len(b))
}

// SameMemory reports whether a and b are the very same bytes (two empty
// slices are).
func SameMemory(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// Overlap reports whether a and b share at least one byte.
func Overlap(a, b []byte) bool {
	alo, ahi := span(a)
	blo, bhi := span(b)
	return len(a) > 0 && len(b) > 0 && alo < bhi && blo < ahi
}

// CheckAlias accepts send and recv when they are disjoint or exactly the
// same memory.
func CheckAlias(send, recv []byte) error {
	if Overlap(send, recv) && !SameMemory(send, recv) {
		return Invalidf("send and recv buffers partially overlap (they must be identical or disjoint)")
	}
	return nil
}

// CheckAliasAt accepts a small buffer and a big one when they are disjoint
// or when small is exactly inPlace, the caller's own block of big (NCCL's
// in-place convention for all_gather, reduce_scatter, gather and scatter).
func CheckAliasAt(small, big, inPlace []byte) error {
	if Overlap(small, big) && !SameMemory(small, inPlace) {
		return Invalidf("send and recv buffers overlap other than in place (the smaller must be the caller's own block of the larger)")
	}
	return nil
}

// CopyUnlessSame copies src into dst unless they are the same memory.
func CopyUnlessSame(dst, src []byte) {
	if !SameMemory(dst, src) {
		copy(dst, src)
	}
}
