package collectives

import (
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
)

// ErrInvalidArgument is wrapped by every error about the arguments of a
// call (lengths, dtype/op, root, counts, algorithm), so callers can tell a
// usage error from a communication failure.
var ErrInvalidArgument = args.ErrInvalidArgument

// wrapOp adds the name of the collective and the caller's rank to err.
func wrapOp(name string, rank int, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s rank %d: %w", name, rank, err)
}
