package main

/*
#include "hccl_go.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// cBuf views count elements of C memory as a byte slice. The memory belongs
// to the caller, who keeps it valid until the work completes; Go never frees
// or retains it after that.
func cBuf(name string, p unsafe.Pointer, count C.size_t, dt reduce.DType) ([]byte, error) {
	if !dt.Valid() {
		return nil, invalid("unsupported dtype %d (valid: 0..%d)", int32(dt), len(reduce.AllDTypes)-1)
	}
	if uint64(count) > uint64(math.MaxInt)/uint64(dt.Size()) {
		return nil, invalid("%s: count %d overflows", name, uint64(count))
	}
	n := int(count) * dt.Size()
	if n == 0 {
		return []byte{}, nil
	}
	if p == nil {
		return nil, invalid("%s is NULL with count %d", name, uint64(count))
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// cBufOptional is cBuf for a buffer that only some ranks use (the root's
// recvbuff of reduce and gather, the root's sendbuff of scatter): NULL
// yields nil instead of an error when the rank does not need it.
func cBufOptional(name string, p unsafe.Pointer, count C.size_t, dt reduce.DType, needed bool) ([]byte, error) {
	if !needed {
		if !dt.Valid() {
			return nil, invalid("unsupported dtype %d", int32(dt))
		}
		return nil, nil
	}
	return cBuf(name, p, count, dt)
}

// cSizes copies n size_t values from C into ints scaled by scale (bytes per
// element).
func cSizes(name string, p *C.size_t, n int, scale int) ([]int, error) {
	if n == 0 {
		return nil, nil
	}
	if p == nil {
		return nil, invalid("%s is NULL", name)
	}
	src := unsafe.Slice(p, n)
	out := make([]int, n)
	for i, v := range src {
		if uint64(v) > uint64(math.MaxInt)/uint64(scale) {
			return nil, invalid("%s[%d] = %d overflows", name, i, uint64(v))
		}
		out[i] = int(v) * scale
	}
	return out, nil
}

// copyOut writes s into a C buffer of len bytes, truncated and NUL-terminated.
func copyOut(buf *C.char, length C.size_t, s string) {
	if buf == nil || length == 0 {
		return
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(length))
	n := copy(dst[:len(dst)-1], s)
	dst[n] = 0
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}
