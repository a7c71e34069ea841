package collectives

import (
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// Argument checks shared by the collectives. Each returns an error wrapping
// ErrInvalidArgument that names the offending argument.

func checkEndpoint(ep transport.Endpoint) error {
	if ep == nil {
		return invalidf("nil endpoint")
	}
	if ep.Size() < 1 || ep.Rank() < 0 || ep.Rank() >= ep.Size() {
		return invalidf("endpoint rank %d outside world of size %d", ep.Rank(), ep.Size())
	}
	return nil
}

// rankOf is the endpoint's rank for error messages, -1 for a nil endpoint.
func rankOf(ep transport.Endpoint) int {
	if ep == nil {
		return -1
	}
	return ep.Rank()
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

// checkCounts requires one non-negative count per rank.
func checkCounts(name string, counts []int, size int) error {
	if len(counts) != size {
		return invalidf("len(%s) = %d, want the world size %d", name, len(counts), size)
	}
	for i, c := range counts {
		if c < 0 {
			return invalidf("%s[%d] = %d is negative", name, i, c)
		}
	}
	return nil
}
