package pgbackend

import (
	"context"
	"errors"

	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Sentinel errors that callers (the C ABI) classify with errors.Is.
var (
	// ErrInvalidArgument wraps every rejection of bad input: the op never ran.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrDestroyed is returned by any call on a destroyed communicator.
	ErrDestroyed = errors.New("communicator destroyed")
	// ErrAborted completes every op pending when the communicator is aborted.
	ErrAborted = errors.New("communicator aborted")
	// ErrTimeout wraps an op that ran past the communicator's timeout.
	ErrTimeout = errors.New("timed out")
)

// Class is a coarse classification of an error, for the C result codes.
type Class int

const (
	ClassNone Class = iota
	ClassInvalidArgument
	ClassInvalidUsage
	ClassSystem
	ClassRemote
	ClassTimeout
	ClassInternal
	ClassAborted
)

// Classify maps an error returned by this package to its Class.
func Classify(err error) Class {
	var peer *transport.PeerError
	var arenaPeer *arena.PeerError
	var lost *PeerFailure
	switch {
	case err == nil:
		return ClassNone
	case errors.Is(err, ErrInvalidArgument):
		return ClassInvalidArgument
	case errors.Is(err, ErrDestroyed), errors.Is(err, ErrParentDestroyed), errors.Is(err, ErrMismatch), errors.Is(err, intra.ErrMismatch):
		return ClassInvalidUsage
	case errors.Is(err, ErrAborted):
		return ClassAborted
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, streams.ErrTimeout):
		return ClassTimeout
	case errors.As(err, &peer), errors.As(err, &arenaPeer), errors.As(err, &lost):
		return ClassRemote
	default:
		return ClassSystem
	}
}
