// Package args holds the argument checks and buffer helpers that the
// collectives of every hop share: package collectives (messages),
// collectives/intra (the shared-memory arena) and collectives/hier (both).
// Every check returns an error wrapping ErrInvalidArgument that names the
// offending argument, so callers tell usage errors from communication
// failures whichever hop refused the call.
package args

import (
	"errors"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// ErrInvalidArgument is collectives.ErrInvalidArgument: it is defined here
// so that the packages below collectives can wrap it.
var ErrInvalidArgument = errors.New("invalid argument")

// Invalidf returns an error wrapping ErrInvalidArgument.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// CheckReduction rejects a dtype/op pair the kernels cannot apply.
func CheckReduction(dt reduce.DType, op reduce.Op) error {
	if err := reduce.Check(dt, op); err != nil {
		return Invalidf("%v", err)
	}
	return nil
}

// CheckElems requires buf to hold whole elements of dt.
func CheckElems(name string, buf []byte, dt reduce.DType) error {
	if len(buf)%dt.Size() != 0 {
		return Invalidf("len(%s) = %d bytes is not a multiple of the %s element size %d", name, len(buf), dt, dt.Size())
	}
	return nil
}

// CheckLen requires buf to be want bytes long.
func CheckLen(name string, buf []byte, want int) error {
	if len(buf) != want {
		return Invalidf("len(%s) = %d, want %d", name, len(buf), want)
	}
	return nil
}

// CheckRoot requires root in [0, size).
func CheckRoot(root, size int) error {
	if root < 0 || root >= size {
		return Invalidf("root %d outside [0, %d)", root, size)
	}
	return nil
}

// CheckCounts requires one non-negative count per rank.
func CheckCounts(name string, counts []int, size int) error {
	if len(counts) != size {
		return Invalidf("len(%s) = %d, want the world size %d", name, len(counts), size)
	}
	for i, c := range counts {
		if c < 0 {
			return Invalidf("%s[%d] = %d is negative", name, i, c)
		}
	}
	return nil
}

// CheckAllReduce checks the buffers of an all_reduce: a supported dtype and
// op, send whole elements, recv as long as send, and the two either the
// same memory or apart.
func CheckAllReduce(send, recv []byte, dt reduce.DType, op reduce.Op) error {
	if err := CheckReduction(dt, op); err != nil {
		return err
	}
	return CheckAllReduceBuffers(send, recv, dt)
}

// CheckAllReduceBuffers is CheckAllReduce without the dtype and op check,
// for callers that made it already.
func CheckAllReduceBuffers(send, recv []byte, dt reduce.DType) error {
	if err := CheckElems("send", send, dt); err != nil {
		return err
	}
	if err := CheckLen("recv", recv, len(send)); err != nil {
		return err
	}
	return CheckAlias(send, recv)
}
