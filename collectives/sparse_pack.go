package collectives

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// pairLayout is how one rank's (index, value) pairs travel: all its
// indices, then all its values, each part padded to 8 bytes so that every
// part of a gathered buffer stays aligned for its type. Indices travel as
// int32 when the dense length allows, halving their bytes.
type pairLayout struct {
	indexBytes, valueBytes int
}

func newPairLayout(n, es int) pairLayout {
	if n <= 1<<31 {
		return pairLayout{indexBytes: 4, valueBytes: es}
	}
	return pairLayout{indexBytes: 8, valueBytes: es}
}

func (l pairLayout) pairBytes() int { return l.indexBytes + l.valueBytes }

// size is the packed size of nnz pairs.
func (l pairLayout) size(nnz int) int { return pad8(nnz*l.indexBytes) + pad8(nnz*l.valueBytes) }

func pad8(n int) int { return (n + 7) &^ 7 }

// pack writes indices and values into dst (l.size(len(indices)) bytes).
func (l pairLayout) pack(dst []byte, indices []int64, values []byte) {
	for j, i := range indices {
		if l.indexBytes == 4 {
			binary.NativeEndian.PutUint32(dst[4*j:], uint32(i))
		} else {
			binary.NativeEndian.PutUint64(dst[8*j:], uint64(i))
		}
	}
	copy(dst[pad8(len(indices)*l.indexBytes):], values)
}

// scatterAdd adds the nnz pairs packed in block into out. A peer's index
// outside out is an error, never a write out of bounds.
func (l pairLayout) scatterAdd(dt reduce.DType, out, block []byte, nnz int) error {
	if len(block) != l.size(nnz) {
		return fmt.Errorf("packed pairs: %d bytes for %d pairs, want %d", len(block), nnz, l.size(nnz))
	}
	idx := block[:nnz*l.indexBytes]
	vals := block[pad8(nnz*l.indexBytes):][:nnz*l.valueBytes]
	switch dt {
	case reduce.Float32:
		return addPairs(sparseView[float32](out), idx, l.indexBytes, sparseView[float32](vals))
	case reduce.Float64:
		return addPairs(sparseView[float64](out), idx, l.indexBytes, sparseView[float64](vals))
	case reduce.Int32:
		return addPairs(sparseView[int32](out), idx, l.indexBytes, sparseView[int32](vals))
	case reduce.Int64:
		return addPairs(sparseView[int64](out), idx, l.indexBytes, sparseView[int64](vals))
	default:
		return args.Invalidf("sparse all_reduce of %s", dt)
	}
}

type sparseValue interface {
	~int32 | ~int64 | ~float32 | ~float64
}

func addPairs[T sparseValue](out []T, idx []byte, indexBytes int, vals []T) error {
	if indexBytes == 4 {
		return addIndexed(out, sparseView[int32](idx), vals)
	}
	return addIndexed(out, sparseView[int64](idx), vals)
}

func addIndexed[T sparseValue, I int32 | int64](out []T, idx []I, vals []T) error {
	for j, i := range idx {
		if uint64(i) >= uint64(len(out)) {
			return fmt.Errorf("pair %d has index %d outside the dense buffer of %d elements", j, i, len(out))
		}
		out[i] += vals[j]
	}
	return nil
}

// sparseView reinterprets an 8-byte aligned byte buffer (a dense buffer, or part
// of one from alignedBytes) as a slice of T.
func sparseView[T any](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// alignedBytes allocates n bytes aligned to 8.
func alignedBytes(n int) []byte {
	words := make([]uint64, (n+7)/8)
	if len(words) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), 8*len(words))[:n]
}
