package transporttest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// The suite orders events by waiting for the state that proves the first
// one happened (transport.Queues), never by sleeping: a receive posted
// before its message, a message held before its receive.

// queuesOf returns e as transport.Queues; the suite needs it.
func queuesOf(t *testing.T, e transport.Endpoint) transport.Queues {
	t.Helper()
	q, ok := e.(transport.Queues)
	require.True(t, ok, "%T does not implement transport.Queues, which the suite uses to order events", e)
	return q
}

// WaitPosted waits until e holds a receive from peer under tag that no
// message has matched yet.
func WaitPosted(t *testing.T, e transport.Endpoint, peer int, tag transport.Tag) {
	t.Helper()
	q := queuesOf(t, e)
	require.Eventually(t, func() bool {
		posted, _ := q.Queued(peer, tag)
		return posted > 0
	}, 5*time.Second, 50*time.Microsecond, "rank %d: the receive from rank %d tag %#x was never posted", e.Rank(), peer, uint64(tag))
}

// WaitArrived waits until e holds n messages from peer under tag that no
// receive has taken yet.
func WaitArrived(t *testing.T, e transport.Endpoint, peer int, tag transport.Tag, n int) {
	t.Helper()
	q := queuesOf(t, e)
	require.Eventually(t, func() bool {
		_, arrived := q.Queued(peer, tag)
		return arrived >= n
	}, 5*time.Second, 50*time.Microsecond, "rank %d: %d messages from rank %d tag %#x never arrived", e.Rank(), n, peer, uint64(tag))
}
