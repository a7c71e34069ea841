package intra

import (
	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// publish writes this rank's contribution src into a shared buffer: a copy,
// or for PreMulSum the input already multiplied by preMul, so that every
// reader sums scaled inputs.
func publish(dt reduce.DType, op reduce.Op, preMul float64, dst, src []byte) {
	if op == reduce.PreMulSum {
		reduce.Scale(dt, dst, src, preMul)
		return
	}
	copy(dst, src)
}

// reduceInto writes in(0) op in(1) op ... op in(p-1), in rank order, into
// dst (p >= 2). dst may be exactly in(0) or in(1); never a later input.
func reduceInto(dt reduce.DType, op reduce.Op, dst []byte, p int, in func(j int) []byte) {
	reduce.Reduce3(dt, op, dst, in(0), in(1))
	for j := 2; j < p; j++ {
		reduce.Reduce(dt, op, dst, in(j))
	}
}

// reduceIntoDup is reduceInto followed by finishAvg, writing the result
// into both dst and dup: the last pass reduces (and for Avg divides) a few
// KiB at a time and writes both while the data is in L1. dup must not be
// an input; dst may be any input (earlier ones are consumed by then).
func reduceIntoDup(dt reduce.DType, op reduce.Op, dst, dup []byte, p int, in func(j int) []byte) {
	divisor := 1
	if op == reduce.Avg {
		divisor = p
	}
	if p == 2 {
		reduce.Reduce3DupDivide(dt, op, dst, dup, in(0), in(1), divisor)
		return
	}
	reduce.Reduce3(dt, op, dup, in(0), in(1))
	for j := 2; j < p-1; j++ {
		reduce.Reduce(dt, op, dup, in(j))
	}
	reduce.Reduce3DupDivide(dt, op, dst, dup, dup, in(p-1), divisor)
}

// finishAvg divides a complete sum by the number of ranks for Avg.
func finishAvg(dt reduce.DType, op reduce.Op, buf []byte, p int) {
	if op == reduce.Avg {
		reduce.DivideBy(dt, buf, p)
	}
}

// local is a reduction over one rank: the input (scaled for PreMulSum).
func local(dt reduce.DType, op reduce.Op, preMul float64, dst, src []byte) {
	if op == reduce.PreMulSum {
		reduce.Scale(dt, dst, src, preMul)
		return
	}
	args.CopyUnlessSame(dst, src)
}
