package collectives

import "unsafe"

// Helpers about the caller's buffers: aliasing, and how a buffer splits into
// the per-rank blocks that ring algorithms move.

// span returns the address range [lo, hi) of b; empty slices have none.
func span(b []byte) (lo, hi uintptr) {
	if len(b) == 0 {
		return 0, 0
	}
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return lo, lo + uintptr(len(b))
}

// sameMemory reports whether a and b are the very same bytes.
func sameMemory(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	return unsafe.SliceData(a) == unsafe.SliceData(b)
}

// overlap reports whether a and b share at least one byte.
func overlap(a, b []byte) bool {
	alo, ahi := span(a)
	blo, bhi := span(b)
	return alo < bhi && blo < ahi && len(a) > 0 && len(b) > 0
}

// checkAlias accepts send and recv when they are disjoint or exactly the
// same memory.
func checkAlias(send, recv []byte) error {
	if overlap(send, recv) && !sameMemory(send, recv) {
		return invalidf("send and recv buffers partially overlap (they must be identical or disjoint)")
	}
	return nil
}

// checkAliasAt accepts a small buffer and a big one when they are disjoint
// or when small is exactly inPlace, the caller's own block of big (NCCL's
// in-place convention for all_gather, reduce_scatter, gather and scatter).
func checkAliasAt(small, big, inPlace []byte) error {
	if overlap(small, big) && !sameMemory(small, inPlace) {
		return invalidf("send and recv buffers overlap other than in place (the smaller must be the caller's own block of the larger)")
	}
	return nil
}

// copyUnlessSame copies src into dst unless they are the same memory.
func copyUnlessSame(dst, src []byte) {
	if !sameMemory(dst, src) {
		copy(dst, src)
	}
}

// blocks is a partition of a buffer into one contiguous block per rank.
type blocks struct {
	off, size []int // bytes
}

func (b blocks) of(buf []byte, i int) []byte {
	return buf[b.off[i] : b.off[i]+b.size[i]]
}

// evenBlocks splits n elements of esize bytes over p ranks: the first n%p
// blocks get one element more than the others.
func evenBlocks(n, esize, p int) blocks {
	counts := make([]int, p)
	for i := range counts {
		counts[i] = n / p
		if i < n%p {
			counts[i]++
		}
	}
	return countBlocks(counts, esize)
}

// countBlocks lays out blocks of counts[i] elements of esize bytes.
func countBlocks(counts []int, esize int) blocks {
	b := blocks{off: make([]int, len(counts)), size: make([]int, len(counts))}
	off := 0
	for i, c := range counts {
		b.off[i], b.size[i] = off, c*esize
		off += c * esize
	}
	return b
}

// numChunks is the number of pieces of at most chunk bytes (a multiple of
// the element size) that a block of n bytes is cut into; chunkOf is piece k.
func numChunks(n, chunk int) int {
	return (n + chunk - 1) / chunk
}

func chunkOf(buf []byte, k, chunk int) []byte {
	lo := k * chunk
	return buf[lo:min(len(buf), lo+chunk)]
}

// mod returns x modulo p in [0, p).
func mod(x, p int) int {
	return ((x % p) + p) % p
}

// sum adds up xs.
func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
