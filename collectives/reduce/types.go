// Package reduce holds the element types and reduction operators of the
// library, and the kernels that apply an operator to two buffers.
//
// The numeric values of DType and Op are part of the C ABI (include/hccl_go.h)
// and must not change.
package reduce

import "fmt"

// DType is the element type of a buffer.
type DType int32

// The values follow nccl.h where NCCL has the type.
const (
	Int8      DType = 0
	Uint8     DType = 1
	Int32     DType = 2
	Uint32    DType = 3
	Int64     DType = 4
	Uint64    DType = 5
	Float16   DType = 6
	Float32   DType = 7
	Float64   DType = 8
	BFloat16  DType = 9
	Bool      DType = 10
	Int16     DType = 11
	Uint16    DType = 12
	numDTypes       = 13
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
}{
	Int8: {"int8", 1}, Uint8: {"uint8", 1}, Int32: {"int32", 4}, Uint32: {"uint32", 4},
	Int64: {"int64", 8}, Uint64: {"uint64", 8}, Float16: {"float16", 2}, Float32: {"float32", 4},
	Float64: {"float64", 8}, BFloat16: {"bfloat16", 2}, Bool: {"bool", 1}, Int16: {"int16", 2},
	Uint16: {"uint16", 2},
}

// AllDTypes lists every supported element type, for tests and validation.
var AllDTypes = []DType{Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64, BFloat16, Bool, Int16, Uint16}

// Valid reports whether d is a known element type.
func (d DType) Valid() bool { return d >= 0 && d < numDTypes }

// Size is the size of one element in bytes.
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", int32(d))
	}
	return dtypeInfo[d].name
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float16 || d == Float32 || d == Float64 || d == BFloat16
}

// Op is a reduction operator.
type Op int32

// The first five follow nccl.h.
const (
	Sum       Op = 0
	Prod      Op = 1
	Max       Op = 2
	Min       Op = 3
	Avg       Op = 4 // Sum, then divide by the number of ranks
	PreMulSum Op = 5 // each rank multiplies its input by a scalar, then Sum
	Band      Op = 6
	Bor       Op = 7
	Bxor      Op = 8
	numOps       = 9
)

var opNames = [numOps]string{"sum", "prod", "max", "min", "avg", "premul_sum", "band", "bor", "bxor"}

// AllOps lists every operator, for tests and validation.
var AllOps = []Op{Sum, Prod, Max, Min, Avg, PreMulSum, Band, Bor, Bxor}

// Valid reports whether o is a known operator.
func (o Op) Valid() bool { return o >= 0 && o < numOps }

func (o Op) String() string {
	if !o.Valid() {
		return fmt.Sprintf("op(%d)", int32(o))
	}
	return opNames[o]
}

// IsBitwise reports whether o is one of the bitwise operators.
func (o Op) IsBitwise() bool { return o == Band || o == Bor || o == Bxor }

// Check returns an error naming the problem if op cannot be applied to dt:
// unknown values, bitwise operators on floating-point types, and arithmetic
// averaging or pre-multiplication of bool.
func Check(dt DType, op Op) error {
	if !dt.Valid() {
		return fmt.Errorf("unsupported dtype %s", dt)
	}
	if !op.Valid() {
		return fmt.Errorf("unsupported reduce op %s", op)
	}
	if op.IsBitwise() && dt.IsFloat() {
		return fmt.Errorf("reduce op %s is not valid for floating-point dtype %s", op, dt)
	}
	if dt == Bool && (op == Avg || op == PreMulSum) {
		return fmt.Errorf("reduce op %s is not valid for dtype bool", op)
	}
	return nil
}
