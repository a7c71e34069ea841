// Package transport moves byte messages between the ranks of one communicator.
//
// An Endpoint is one rank's view of its links to every other rank. Messages are
// matched by (peer, tag): a Recv from peer p under tag t takes the oldest message
// that p sent to this rank under t. Messages with the same (peer, tag) arrive in
// the order they were sent; messages under different tags are independent, so
// collectives running concurrently on two streams, and point-to-point traffic,
// never block each other.
//
// Implementations: inproc (goroutines, for tests) and tcp (across processes and
// hosts). A send never waits for the matching receive to be posted: a message
// that arrives before its receive is buffered by the receiver. That is what
// lets ranks post isend/irecv in any order without deadlock.
package transport

import (
	"context"
	"errors"
	"fmt"
)

// Tag names a logical message stream between two ranks. The communicator gives
// every collective a tag from its sequence number (identical on all ranks) and
// point-to-point messages tags in a separate space; see pgbackend.
type Tag uint64

// P2PTagBit marks tags of user point-to-point messages, so they never collide
// with the tags of collectives (which are sequence numbers, far below it).
const P2PTagBit Tag = 1 << 63

// Endpoint is a rank's set of links to the other ranks of one communicator.
// All methods are safe for concurrent use.
type Endpoint interface {
	// Rank is this endpoint's rank in [0, Size).
	Rank() int
	// Size is the number of ranks in the communicator.
	Size() int
	// Send delivers data to peer under tag. It returns when data may be reused
	// by the caller (copied or written out), not when the peer received it.
	Send(ctx context.Context, peer int, tag Tag, data []byte) error
	// Recv fills buf with the next message sent by peer under tag. The
	// message must be exactly len(buf) bytes long; any other length is an
	// error (ErrSizeMismatch), never a silent truncation.
	Recv(ctx context.Context, peer int, tag Tag, buf []byte) error
	// Close releases every link. Pending and later Send/Recv calls fail with
	// ErrClosed. Close is idempotent.
	Close() error
}

var (
	// ErrClosed is returned by operations on a closed endpoint.
	ErrClosed = errors.New("transport: endpoint closed")
	// ErrSizeMismatch is returned when a received message does not have the
	// length the receiver expected.
	ErrSizeMismatch = errors.New("transport: message size mismatch")
)

// PeerError reports a failure of the link to one peer (connection reset,
// peer process gone, handshake refused). Callers use errors.As to name the
// peer in their own errors.
type PeerError struct {
	Peer int
	Op   string // "send", "recv", "connect", ...
	Err  error
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("%s: peer rank %d: %v", e.Op, e.Peer, e.Err)
}

func (e *PeerError) Unwrap() error { return e.Err }
