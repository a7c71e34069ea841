package symm

import "errors"

var (
	// ErrInvalid reports a bad argument: a rank out of range, a size or
	// offset outside a region, ranks that asked for different sizes.
	ErrInvalid = errors.New("invalid argument")
	// ErrCrossHost reports an operation on a rank of another host that
	// cannot reach it: a view of its memory, or a window without a Remote.
	ErrCrossHost = errors.New("not implemented for ranks on another host (symmetric memory is shared by the ranks of one host only)")
	// ErrTimeout reports a wait that ran out of time while its peers lived.
	ErrTimeout = errors.New("timed out")
	// ErrClosed reports an operation on a closed window.
	ErrClosed = errors.New("window closed")
	// ErrMismatch reports ranks that entered a collective with different
	// descriptions of it (collective.go).
	ErrMismatch = errors.New("ranks disagree on the collective")
)
