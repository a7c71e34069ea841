package match

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// fakeWriter stands for a transport goroutine landing bytes; Interrupt
// records the call and lets the test's writer stop.
type fakeWriter struct {
	once sync.Once
	stop chan struct{}
}

func newFakeWriter() *fakeWriter { return &fakeWriter{stop: make(chan struct{})} }

func (w *fakeWriter) Interrupt() { w.once.Do(func() { close(w.stop) }) }

// waitPosted waits until a Recv from peer under tag is posted in b.
func waitPosted(t *testing.T, b *Box, peer int, tag transport.Tag) {
	t.Helper()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		q := b.queues[key{peer, tag}]
		return q != nil && len(q.posted) > 0
	}, 5*time.Second, 100*time.Microsecond, "the Recv from rank %d tag %d was never posted", peer, tag)
}

// waitWaiter waits until a Recv waits for in's last byte.
func waitWaiter(t *testing.T, b *Box, in *Incoming) {
	t.Helper()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return in.waiter != nil || in.req != nil
	}, 5*time.Second, 100*time.Microsecond, "no Recv claimed the message")
}

func TestLandsInPostedBuffer(t *testing.T) {
	b := NewBox(0, 2)
	buf := make([]byte, 4)
	done := make(chan error, 1)
	go func() { done <- b.Recv(context.Background(), 1, 3, buf) }()
	waitPosted(t, b, 1, 3)
	in, err := b.Arrive(1, 3, 4)
	require.NoError(t, err)
	dst := in.Acquire(0, 2, nil)
	require.Len(t, dst, 2)
	copy(dst, "ab")
	in.Release(0, 2, nil)
	copy(in.Acquire(2, 2, nil), "cd")
	in.Release(2, 2, nil)
	require.NoError(t, <-done)
	assert.Equal(t, "abcd", string(buf))
}

// TestGiveUpWaitsForWriter: a Recv that times out while bytes land in its
// buffer interrupts the writer and returns only after it released; later
// bytes are discarded.
func TestGiveUpWaitsForWriter(t *testing.T) {
	b := NewBox(0, 2)
	buf := make([]byte, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Recv(ctx, 1, 1, buf) }()
	waitPosted(t, b, 1, 1)
	in, err := b.Arrive(1, 1, 8)
	require.NoError(t, err)

	w := newFakeWriter()
	dst := in.Acquire(0, 8, w)
	require.NotNil(t, dst)
	cancel()
	select {
	case <-done:
		t.Fatal("Recv returned while a writer held its buffer")
	case <-w.stop: // interrupted
	}
	select {
	case <-done:
		t.Fatal("Recv returned while a writer held its buffer")
	case <-time.After(10 * time.Millisecond):
	}
	dst[0] = 'x' // still allowed: not released yet
	in.Release(0, 1, w)
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, byte('x'), buf[0])
	assert.Nil(t, in.Acquire(1, 7, nil), "rest is discarded")
	in.Release(1, 7, nil)
}

func TestUnexpectedThenRecv(t *testing.T) {
	b := NewBox(0, 2)
	in, err := b.Arrive(1, 1, 3)
	require.NoError(t, err)
	// A Recv that claims a message still landing waits for its last byte.
	done := make(chan error, 1)
	buf := make([]byte, 3)
	go func() { done <- b.Recv(context.Background(), 1, 1, buf) }()
	copy(in.Acquire(0, 1, nil), "a")
	in.Release(0, 1, nil)
	waitWaiter(t, b, in)
	copy(in.Acquire(1, 2, nil), "bc")
	in.Release(1, 2, nil)
	require.NoError(t, <-done)
	assert.Equal(t, "abc", string(buf))
}

func TestFailPeer(t *testing.T) {
	b := NewBox(0, 3)
	// A complete message survives its sender's failure; nothing else does.
	in, err := b.Arrive(1, 1, 1)
	require.NoError(t, err)
	copy(in.Acquire(0, 1, nil), "k")
	in.Release(0, 1, nil)
	_, err = b.Arrive(1, 2, 5) // incomplete
	require.NoError(t, err)
	pending := make(chan error, 1)
	go func() { pending <- b.Recv(context.Background(), 1, 3, make([]byte, 1)) }()
	waitPosted(t, b, 1, 3)

	b.FailPeer(1, errors.New("reset"))
	var pe *transport.PeerError
	require.ErrorAs(t, <-pending, &pe)
	assert.Equal(t, 1, pe.Peer)
	got := make([]byte, 1)
	require.NoError(t, b.Recv(context.Background(), 1, 1, got))
	assert.Equal(t, "k", string(got))
	require.ErrorAs(t, b.Recv(context.Background(), 1, 2, make([]byte, 5)), &pe)
	_, err = b.Arrive(1, 4, 1)
	require.ErrorAs(t, err, &pe)
	// Other peers are unaffected.
	in, err = b.Arrive(2, 1, 0)
	require.NoError(t, err)
	require.NoError(t, b.Recv(context.Background(), 2, 1, nil))
	_ = in
}

// TestQueuesDoNotAccumulate: tags are sequence numbers, so the box must
// forget a (peer, tag) once its queue is empty.
func TestQueuesDoNotAccumulate(t *testing.T) {
	b := NewBox(0, 2)
	ctx := context.Background()
	for tag := range transport.Tag(1000) {
		in, err := b.Arrive(1, tag, 1)
		require.NoError(t, err)
		in.Acquire(0, 1, nil)
		in.Release(0, 1, nil)
		require.NoError(t, b.Recv(ctx, 1, tag, make([]byte, 1)))
		short, cancel := context.WithTimeout(ctx, time.Microsecond)
		_ = b.Recv(short, 1, tag+5000, make([]byte, 1))
		cancel()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Empty(t, b.queues)
	assert.Empty(t, b.landing)
}

func TestCloseFailsEverything(t *testing.T) {
	b := NewBox(0, 2)
	pending := make(chan error, 1)
	go func() { pending <- b.Recv(context.Background(), 1, 1, make([]byte, 1)) }()
	waitPosted(t, b, 1, 1)
	b.Close()
	require.ErrorIs(t, <-pending, transport.ErrClosed)
	_, err := b.Arrive(1, 1, 1)
	require.ErrorIs(t, err, transport.ErrClosed)
	require.ErrorIs(t, b.Recv(context.Background(), 1, 1, nil), transport.ErrClosed)
}

// TestLateRecvTakesOverStripedMessage: a Recv that claims a message landing
// in several pieces copies the pieces so far and receives the rest in place.
func TestLateRecvTakesOverStripedMessage(t *testing.T) {
	b := NewBox(0, 2)
	in, err := b.Arrive(1, 1, 12)
	require.NoError(t, err)
	land := func(off int, s string) {
		copy(in.Acquire(off, len(s), nil), s)
		in.Release(off, len(s), nil)
	}
	land(0, "ab")
	land(8, "ij")
	land(2, "cd")
	buf := make([]byte, 12)
	done := make(chan error, 1)
	go func() { done <- b.Recv(context.Background(), 1, 1, buf) }()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return in.req != nil
	}, time.Second, time.Millisecond)
	dst := in.Acquire(4, 4, nil)
	copy(dst, "efgh")
	in.Release(4, 4, nil)
	land(10, "kl")
	require.NoError(t, <-done)
	assert.Equal(t, "abcdefghijkl", string(buf))
}

func TestAddSpanMerges(t *testing.T) {
	in := &Incoming{}
	for _, s := range []span{{10, 20}, {0, 5}, {30, 40}, {5, 10}, {20, 30}} {
		in.addSpan(s)
	}
	assert.Equal(t, []span{{0, 40}}, in.spans)
	in.addSpan(span{50, 60})
	in.addSpan(span{45, 50})
	assert.Equal(t, []span{{0, 40}, {45, 60}}, in.spans)
}

func TestStorageClasses(t *testing.T) {
	var p storagePool
	for _, n := range []int{0, 1, 64, 65, 1000, 1 << 20, 1<<20 + 1, 64 << 20, 64<<20 + 1} {
		b := p.get(n)
		require.GreaterOrEqual(t, len(*b), n)
		p.put(b)
	}
	assert.Equal(t, 0, class(64))
	assert.Equal(t, 1, class(65))
	assert.Equal(t, -1, class(64<<20+1))
}
