//go:build !cgo

package reduce

// Without cgo every call runs the pure-Go kernels.

// isaLevels lists the C instruction-set levels the host can run: none.
var isaLevels []int

func cReduce(dt DType, op Op, dst, a, b []byte) bool        { return false }
func cReduceFrom16(dt DType, op Op, dst, src []byte) bool   { return false }
func cScale(dt DType, dst, src []byte, factor float64) bool { return false }
func cDivideBy(dt DType, buf []byte, n int) bool            { return false }
func cConvert(from, to DType, dst, src []byte) bool         { return false }
