package arena

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by operations on a closed Arena.
	ErrClosed = errors.New("arena: closed")
	// ErrBroken is wrapped by the errors of operations refused because an
	// earlier one failed part-way, leaving the ranks out of step.
	ErrBroken = errors.New("arena: unusable after a failed operation")
	// ErrPeerGone is wrapped by PeerError when a peer died or closed its
	// arena.
	ErrPeerGone = errors.New("peer exited or closed its arena")
	// ErrPeerFailed is wrapped by PeerError when a peer failed an
	// operation (Fail) before posting what this rank waited for; the
	// error carries the peer's own message.
	ErrPeerFailed = errors.New("peer failed the operation")
)

// PeerError names the peer (by global rank) that a wait failed on.
type PeerError struct {
	Rank int // global rank of the peer
	Pid  int // the peer's process ID as it reported it
	Err  error
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("peer rank %d (pid %d): %v", e.Rank, e.Pid, e.Err)
}

func (e *PeerError) Unwrap() error { return e.Err }
