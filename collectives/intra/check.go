package intra

import (
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Argument checks: those of every hop are in collectives/internal/args,
// whose errors wrap collectives.ErrInvalidArgument and name the offending
// argument, so callers tell usage errors from communication failures as
// with package collectives. Checks run before an operation starts: a
// refused call leaves the arena usable.

// wrapOp adds the collective's name, the caller's global rank and the
// sequence number to err.
func wrapOp(name string, a *arena.Arena, seq uint64, err error) error {
	if err == nil {
		return nil
	}
	rank := -1
	if a != nil {
		rank = a.Ranks()[a.Index()]
	}
	return fmt.Errorf("%s rank %d seq %d: %w", name, rank, seq, err)
}

func checkArena(a *arena.Arena) error {
	if a == nil {
		return args.Invalidf("nil arena")
	}
	return nil
}
