//go:build !cgo

package reduce

func cReduceDup(dt DType, op Op, dst, dup, a, b []byte) bool { return false }

func cReduceDupDivide(dt DType, op Op, dst, dup, a, b []byte, divisor int) bool { return false }
