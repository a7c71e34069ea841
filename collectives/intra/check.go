package intra

import (
	"fmt"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Argument checks. Each returns an error wrapping
// collectives.ErrInvalidArgument that names the offending argument, so
// callers tell usage errors from communication failures as with package
// collectives. Checks run before an operation starts: a refused call leaves
// the arena usable.

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", collectives.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// wrapOp adds the collective's name, the caller's global rank and the
// sequence number to err.
func wrapOp(name string, a *arena.Arena, seq uint64, err error) error {
	if err == nil {
		return nil
	}
	rank := -1
	if a != nil {
		rank = a.Ranks()[a.Index()]
	}
	return fmt.Errorf("%s rank %d seq %d: %w", name, rank, seq, err)
}

func checkArena(a *arena.Arena) error {
	if a == nil {
		return invalidf("nil arena")
	}
	return nil
}

func checkReduction(dt reduce.DType, op reduce.Op) error {
	if err := reduce.Check(dt, op); err != nil {
		return invalidf("%v", err)
	}
	return nil
}

// checkElems requires buf to hold whole elements of dt.
func checkElems(name string, buf []byte, dt reduce.DType) error {
	if len(buf)%dt.Size() != 0 {
		return invalidf("len(%s) = %d bytes is not a multiple of the %s element size %d", name, len(buf), dt, dt.Size())
	}
	return nil
}

func checkLen(name string, buf []byte, want int) error {
	if len(buf) != want {
		return invalidf("len(%s) = %d, want %d", name, len(buf), want)
	}
	return nil
}

func checkRoot(root, size int) error {
	if root < 0 || root >= size {
		return invalidf("root %d outside [0, %d)", root, size)
	}
	return nil
}

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
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// overlap reports whether a and b share at least one byte.
func overlap(a, b []byte) bool {
	alo, ahi := span(a)
	blo, bhi := span(b)
	return len(a) > 0 && len(b) > 0 && alo < bhi && blo < ahi
}

// checkAlias accepts send and recv when disjoint or exactly the same memory.
func checkAlias(send, recv []byte) error {
	if overlap(send, recv) && !sameMemory(send, recv) {
		return invalidf("send and recv buffers partially overlap (they must be identical or disjoint)")
	}
	return nil
}

// checkAliasAt accepts a small buffer and a big one when disjoint or when
// small is exactly inPlace, the caller's own block of big.
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
