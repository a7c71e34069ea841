// Package transporttest is the conformance suite every transport.Endpoint
// implementation must pass. A transport's tests call Run with a function that
// builds a connected group of endpoints.
package transporttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// NewGroupFunc builds size connected endpoints, element i having rank i. It
// must arrange (t.Cleanup) for them to be closed at the end of the test.
type NewGroupFunc func(t *testing.T, size int) []transport.Endpoint

// testTimeout bounds every case so that a hang fails instead of stalling.
const testTimeout = 20 * time.Second

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, newGroup NewGroupFunc) {
	cases := []testCase{
		{"RankSize", testRankSize},
		{"FIFOPerTag", testFIFOPerTag},
		{"TagsIndependent", testTagsIndependent},
		{"PostOrders", testPostOrders},
		{"UnexpectedCopiesData", testUnexpectedCopiesData},
		{"Sizes", testSizes},
		{"SizeMismatch", testSizeMismatch},
		{"SelfSend", testSelfSend},
		{"Concurrent", testConcurrent},
		{"TaggedStress", testTaggedStress},
		{"CloseRightAfterExchange", testCloseRightAfterExchange},
		{"RecvTimeout", testRecvTimeout},
		{"Close", testClose},
		{"PeerDeath", testPeerDeath},
		{"BadPeerRank", testBadPeerRank},
	}
	runCases(t, newGroup, cases)
	t.Run("AnySource", func(t *testing.T) {
		if _, ok := newGroup(t, 1)[0].(transport.AnySource); !ok {
			t.Skip("the endpoint does not implement transport.AnySource")
		}
		RunAnySource(t, newGroup)
	})
}

// testCase is one named case of the suite.
type testCase struct {
	name string
	fn   func(t *testing.T, newGroup NewGroupFunc)
}

// runCases runs each case as a subtest of t.
func runCases(t *testing.T, newGroup NewGroupFunc, cases []testCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newGroup) })
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// pattern returns n bytes that depend on seed, so that a misplaced or mixed
// up message is noticed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func testRankSize(t *testing.T, newGroup NewGroupFunc) {
	eps := newGroup(t, 3)
	require.Len(t, eps, 3)
	for i, e := range eps {
		assert.Equal(t, i, e.Rank())
		assert.Equal(t, 3, e.Size())
	}
}

func testFIFOPerTag(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	const n = 200
	errc := make(chan error, 1)
	go func() {
		var b [8]byte
		for i := range n {
			binary.LittleEndian.PutUint64(b[:], uint64(i))
			if err := eps[0].Send(ctx, 1, 5, b[:]); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	var b [8]byte
	for i := range n {
		require.NoError(t, eps[1].Recv(ctx, 0, 5, b[:]))
		require.Equal(t, uint64(i), binary.LittleEndian.Uint64(b[:]), "message %d out of order", i)
	}
	require.NoError(t, <-errc)
}

func testTagsIndependent(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	const tagA, tagB = transport.Tag(1), transport.P2PTagBit | 1
	require.NoError(t, eps[0].Send(ctx, 1, tagA, []byte("first-A")))
	require.NoError(t, eps[0].Send(ctx, 1, tagB, []byte("then-B")))
	// B is consumed while A is still waiting unconsumed.
	gotB := make([]byte, 6)
	require.NoError(t, eps[1].Recv(ctx, 0, tagB, gotB))
	assert.Equal(t, "then-B", string(gotB))
	gotA := make([]byte, 7)
	require.NoError(t, eps[1].Recv(ctx, 0, tagA, gotA))
	assert.Equal(t, "first-A", string(gotA))

	// A receive blocked on one tag does not hold back another tag.
	recvA := make(chan error, 1)
	go func() { recvA <- eps[1].Recv(ctx, 0, tagA, make([]byte, 3)) }()
	require.NoError(t, eps[0].Send(ctx, 1, tagB, []byte("bb")))
	require.NoError(t, eps[1].Recv(ctx, 0, tagB, make([]byte, 2)))
	require.NoError(t, eps[0].Send(ctx, 1, tagA, []byte("aaa")))
	require.NoError(t, <-recvA)
}

func testPostOrders(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	msg := pattern(1000, 3)

	// Receive posted well before the send.
	got := make([]byte, len(msg))
	done := make(chan error, 1)
	go func() { done <- eps[1].Recv(ctx, 0, 1, got) }()
	WaitPosted(t, eps[1], 0, 1)
	require.NoError(t, eps[0].Send(ctx, 1, 1, msg))
	require.NoError(t, <-done)
	assert.Equal(t, msg, got)

	// Send completes before the receive is posted.
	require.NoError(t, eps[0].Send(ctx, 1, 2, msg))
	WaitArrived(t, eps[1], 0, 2, 1)
	clear(got)
	require.NoError(t, eps[1].Recv(ctx, 0, 2, got))
	assert.Equal(t, msg, got)

	// Both ranks send first, then receive: no deadlock (isend/irecv pattern).
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			peer := 1 - r
			assert.NoError(t, eps[r].Send(ctx, peer, 3, pattern(64<<10, byte(r))))
			buf := make([]byte, 64<<10)
			assert.NoError(t, eps[r].Recv(ctx, peer, 3, buf))
			assert.Equal(t, pattern(64<<10, byte(peer)), buf)
		}()
	}
	wg.Wait()
}

func testUnexpectedCopiesData(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	buf := make([]byte, 4096)
	for i := range 10 {
		copy(buf, pattern(len(buf), byte(i)))
		require.NoError(t, eps[0].Send(ctx, 1, 9, buf))
		clear(buf) // the sender may reuse its buffer as soon as Send returns
	}
	got := make([]byte, len(buf))
	for i := range 10 {
		require.NoError(t, eps[1].Recv(ctx, 0, 9, got))
		require.Equal(t, pattern(len(buf), byte(i)), got, "message %d", i)
	}
}

func testSizes(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	for i, n := range []int{0, 1, 7, 4096, 1 << 20, 8<<20 + 3} {
		for _, posted := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/posted=%v", n, posted), func(t *testing.T) {
				tag := transport.Tag(100 + i)
				msg := pattern(n, byte(i))
				got := make([]byte, n)
				if posted {
					done := make(chan error, 1)
					go func() { done <- eps[1].Recv(ctx, 0, tag, got) }()
					WaitPosted(t, eps[1], 0, tag)
					require.NoError(t, eps[0].Send(ctx, 1, tag, msg))
					require.NoError(t, <-done)
				} else {
					require.NoError(t, sendAsync(ctx, eps[0], 1, tag, msg, func() error {
						WaitArrived(t, eps[1], 0, tag, 1)
						return eps[1].Recv(ctx, 0, tag, got)
					}))
				}
				require.True(t, bytes.Equal(msg, got), "payload differs")
			})
		}
	}
}

// sendAsync runs a Send concurrently with recv (a large Send may block until
// the receiver reads) and returns the first error of either.
func sendAsync(ctx context.Context, e transport.Endpoint, peer int, tag transport.Tag, msg []byte, recv func() error) error {
	sent := make(chan error, 1)
	go func() { sent <- e.Send(ctx, peer, tag, msg) }()
	rerr := recv()
	serr := <-sent
	return errors.Join(serr, rerr)
}

func testSizeMismatch(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)

	// Message already buffered when the wrong-sized receive comes.
	require.NoError(t, eps[0].Send(ctx, 1, 1, make([]byte, 10)))
	WaitArrived(t, eps[1], 0, 1, 1)
	err := eps[1].Recv(ctx, 0, 1, make([]byte, 9))
	require.ErrorIs(t, err, transport.ErrSizeMismatch)

	// Receive posted before the message, larger than it.
	done := make(chan error, 1)
	go func() { done <- eps[1].Recv(ctx, 0, 2, make([]byte, 11)) }()
	WaitPosted(t, eps[1], 0, 2)
	require.NoError(t, eps[0].Send(ctx, 1, 2, make([]byte, 10)))
	require.ErrorIs(t, <-done, transport.ErrSizeMismatch)

	// The link still works afterwards.
	require.NoError(t, eps[0].Send(ctx, 1, 3, []byte("ok")))
	got := make([]byte, 2)
	require.NoError(t, eps[1].Recv(ctx, 0, 3, got))
	assert.Equal(t, "ok", string(got))
}

func testSelfSend(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	require.NoError(t, eps[1].Send(ctx, 1, 4, []byte("me")))
	got := make([]byte, 2)
	require.NoError(t, eps[1].Recv(ctx, 1, 4, got))
	assert.Equal(t, "me", string(got))
}

// testConcurrent has every rank exchange with every other rank from many
// goroutines at once, on distinct and on shared tags.
func testConcurrent(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	const size, workers, msgs = 4, 4, 20
	eps := newGroup(t, size)
	var wg sync.WaitGroup
	for r := range size {
		for p := range size {
			if p == r {
				continue
			}
			for w := range workers {
				tag := transport.Tag(w)
				wg.Add(2)
				go func() { // sender r -> p
					defer wg.Done()
					for i := range msgs {
						n := 1 + (i*131+w*17)%3000
						if err := eps[r].Send(ctx, p, tag, pattern(n, byte(i+r))); err != nil {
							t.Errorf("send %d->%d: %v", r, p, err)
							return
						}
					}
				}()
				go func() { // receiver at p from r
					defer wg.Done()
					for i := range msgs {
						n := 1 + (i*131+w*17)%3000
						got := make([]byte, n)
						if err := eps[p].Recv(ctx, r, tag, got); err != nil {
							t.Errorf("recv %d<-%d: %v", p, r, err)
							return
						}
						if !bytes.Equal(pattern(n, byte(i+r)), got) {
							t.Errorf("recv %d<-%d tag %d msg %d: wrong payload", p, r, tag, i)
							return
						}
					}
				}()
			}
		}
	}
	wg.Wait()
}

func testRecvTimeout(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := eps[1].Recv(short, 0, 1, make([]byte, 4))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)

	// The abandoned receive does not swallow the next message.
	require.NoError(t, eps[0].Send(ctx, 1, 1, []byte("next")))
	got := make([]byte, 4)
	require.NoError(t, eps[1].Recv(ctx, 0, 1, got))
	assert.Equal(t, "next", string(got))

	// An already cancelled context fails at once.
	dead, cancelDead := context.WithCancel(ctx)
	cancelDead()
	require.ErrorIs(t, eps[1].Recv(dead, 0, 1, got), context.Canceled)
}

func testClose(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	pending := make(chan error, 1)
	go func() { pending <- eps[1].Recv(ctx, 0, 1, make([]byte, 4)) }()
	WaitPosted(t, eps[1], 0, 1)
	require.NoError(t, eps[1].Close())
	select {
	case err := <-pending:
		require.ErrorIs(t, err, transport.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("pending Recv not released by Close")
	}
	require.ErrorIs(t, eps[1].Recv(ctx, 0, 1, make([]byte, 4)), transport.ErrClosed)
	require.ErrorIs(t, eps[1].Send(ctx, 0, 1, []byte("x")), transport.ErrClosed)
	require.NoError(t, eps[1].Close(), "Close is idempotent")
}

func testPeerDeath(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 3)
	pending := make(chan error, 1)
	go func() { pending <- eps[0].Recv(ctx, 2, 1, make([]byte, 4)) }()
	WaitPosted(t, eps[0], 2, 1)
	start := time.Now()
	require.NoError(t, eps[2].Close())

	var pe *transport.PeerError
	select {
	case err := <-pending:
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, 2, pe.Peer)
		assert.Less(t, time.Since(start), 2*time.Second, "peer death noticed late")
	case <-time.After(5 * time.Second):
		t.Fatal("pending Recv from a dead peer not released")
	}
	err := eps[0].Recv(ctx, 2, 2, make([]byte, 4))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 2, pe.Peer)
	require.Eventually(t, func() bool {
		err := eps[1].Send(ctx, 2, 1, []byte("x"))
		return errors.As(err, &pe) && pe.Peer == 2
	}, 5*time.Second, 5*time.Millisecond, "send to a dead peer keeps succeeding")

	// The surviving ranks still talk.
	require.NoError(t, eps[0].Send(ctx, 1, 7, []byte("alive")))
	got := make([]byte, 5)
	require.NoError(t, eps[1].Recv(ctx, 0, 7, got))
	assert.Equal(t, "alive", string(got))
}

func testBadPeerRank(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	require.Error(t, eps[0].Send(ctx, 2, 1, nil))
	require.Error(t, eps[0].Send(ctx, -1, 1, nil))
	require.Error(t, eps[0].Recv(ctx, 5, 1, nil))
}
