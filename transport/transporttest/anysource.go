package transporttest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// RunAnySource runs the cases of transport.AnySource as subtests of t, for
// endpoints that implement it.
func RunAnySource(t *testing.T, newGroup NewGroupFunc) {
	runCases(t, newGroup, []testCase{
		{"EverySenderOnce", testAnyEverySenderOnce},
		{"Admits", testAnyAdmits},
		{"LargeWhileArriving", testAnyLarge},
		{"SizeMismatch", testAnySizeMismatch},
		{"Timeout", testAnyTimeout},
		{"PeerDeath", testAnyPeerDeath},
	})
}

func all(int) bool { return true }

// testAnyEverySenderOnce: every rank, this one included, sends one message;
// wildcard receives, posted before and after the messages arrive, get each
// sender's message once, with its own bytes.
func testAnyEverySenderOnce(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	const size = 4
	eps := newGroup(t, size)
	const tag transport.Tag = transport.P2PTagBit | 3
	// The first two messages are held before any wildcard receive runs;
	// the others are sent once the receiver has taken those two, while it
	// polls for more.
	for r := range 2 {
		require.NoError(t, eps[r].Send(ctx, 0, tag, bytes.Repeat([]byte{byte(r + 1)}, 16)))
		WaitArrived(t, eps[0], r, tag, 1)
	}
	got := make(chan int, size)
	go func() {
		for range size {
			buf := make([]byte, 16)
			peer, err := transport.RecvAny(ctx, eps[0], tag, buf, all)
			if !assert.NoError(t, err) {
				got <- -1
				continue
			}
			assert.Equal(t, bytes.Repeat([]byte{byte(peer + 1)}, 16), buf, "bytes from rank %d", peer)
			got <- peer
		}
	}()
	seen := map[int]int{<-got: 1}
	seen[<-got]++
	for r := 2; r < size; r++ {
		require.NoError(t, eps[r].Send(ctx, 0, tag, bytes.Repeat([]byte{byte(r + 1)}, 16)))
	}
	for range size - 2 {
		seen[<-got]++
	}
	assert.Equal(t, map[int]int{0: 1, 1: 1, 2: 1, 3: 1}, seen)
}

// testAnyAdmits: a wildcard receive leaves the messages of peers it does not
// admit, and of other tags, to their own receives.
func testAnyAdmits(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 3)
	require.NoError(t, eps[1].Send(ctx, 0, 5, []byte("one")))
	require.NoError(t, eps[2].Send(ctx, 0, 6, []byte("two")))
	require.NoError(t, eps[2].Send(ctx, 0, 5, []byte("TWO")))
	buf := make([]byte, 3)
	peer, err := transport.RecvAny(ctx, eps[0], 5, buf, func(p int) bool { return p != 1 })
	require.NoError(t, err)
	assert.Equal(t, 2, peer)
	assert.Equal(t, "TWO", string(buf))
	require.NoError(t, eps[0].Recv(ctx, 1, 5, buf))
	assert.Equal(t, "one", string(buf))
	require.NoError(t, eps[0].Recv(ctx, 2, 6, buf))
	assert.Equal(t, "two", string(buf))
}

// testAnyLarge: a message big enough to arrive in many pieces (and, on
// shared memory, to be offered single-copy) is received whole.
func testAnyLarge(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	sent := make(chan error, 1)
	go func() { sent <- eps[1].Send(ctx, 0, 9, data) }()
	buf := make([]byte, len(data))
	peer, err := transport.RecvAny(ctx, eps[0], 9, buf, all)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	assert.Equal(t, 1, peer)
	assert.True(t, bytes.Equal(data, buf), "bytes differ")
}

func testAnySizeMismatch(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	require.NoError(t, eps[1].Send(ctx, 0, 4, []byte("abcd")))
	_, err := transport.RecvAny(ctx, eps[0], 4, make([]byte, 3), all)
	require.ErrorIs(t, err, transport.ErrSizeMismatch)
}

func testAnyTimeout(t *testing.T, newGroup NewGroupFunc) {
	eps := newGroup(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := transport.RecvAny(ctx, eps[0], 4, make([]byte, 3), all)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// Nothing was left posted: a later message goes to a later receive.
	ctx = testCtx(t)
	require.NoError(t, eps[1].Send(ctx, 0, 4, []byte("abc")))
	buf := make([]byte, 3)
	require.NoError(t, eps[0].Recv(ctx, 1, 4, buf))
	assert.Equal(t, "abc", string(buf))
}

// testAnyPeerDeath: a wildcard receive waiting for a peer that dies fails
// with an error naming it.
func testAnyPeerDeath(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 3)
	pending := make(chan error, 1)
	go func() {
		_, err := transport.RecvAny(ctx, eps[0], 1, make([]byte, 4), func(p int) bool { return p == 2 })
		pending <- err
	}()
	// RecvAny polls: a death before it starts and one while it waits reach
	// it through the same check of each try, so nothing waits for it here.
	require.NoError(t, eps[2].Close())
	select {
	case err := <-pending:
		var pe *transport.PeerError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, 2, pe.Peer)
	case <-time.After(5 * time.Second):
		t.Fatal("wildcard receive from a dead peer not released")
	}
}
