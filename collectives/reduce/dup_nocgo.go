//go:build !cgo

package reduce

func cReduceDupDivide(dt DType, op Op, dst, dup, a, b []byte, divisor int) bool { return false }
