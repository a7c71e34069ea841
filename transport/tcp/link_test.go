package tcp

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13) ^ seed
	}
	return b
}

// TestStripedFIFO sends large (striped) and small messages interleaved on
// one tag over 4 streams with small frames; they arrive complete and in order.
func TestStripedFIFO(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	eps := connectAll(t, 2, Config{StreamsPerPeer: 4, MaxFrameBytes: 16 << 10})
	sizes := []int{1 << 20, 3, 300 << 10, 0, 2<<20 + 5, 17, 256 << 10, 1}
	const rounds = 4
	sendErr := make(chan error, 1)
	go func() {
		for r := range rounds {
			for i, n := range sizes {
				if err := eps[0].Send(ctx, 1, 42, payload(n, byte(r*len(sizes)+i))); err != nil {
					sendErr <- err
					return
				}
			}
		}
		sendErr <- nil
	}()
	for r := range rounds {
		for i, n := range sizes {
			got := make([]byte, n)
			require.NoError(t, eps[1].Recv(ctx, 0, 42, got), "round %d message %d", r, i)
			require.True(t, bytes.Equal(payload(n, byte(r*len(sizes)+i)), got), "round %d message %d corrupt", r, i)
		}
	}
	require.NoError(t, <-sendErr)
}

// TestRecvGivesUpMidMessage: a receive whose deadline passes while its
// message is landing in its buffer returns, and nothing writes into the
// buffer afterwards; the link stays usable.
func TestRecvGivesUpMidMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	eps := connectAll(t, 2, Config{StreamsPerPeer: 2, MaxFrameBytes: 64 << 10})
	const n = 8 << 20
	msg := payload(n, 1)
	for i := range 3 {
		buf := make([]byte, n)
		short, stop := context.WithTimeout(ctx, time.Duration(i+1)*time.Millisecond)
		sent := make(chan error, 1)
		go func() { sent <- eps[0].Send(ctx, 1, transport.Tag(i), msg) }()
		err := eps[1].Recv(short, 0, transport.Tag(i), buf)
		stop()
		snapshot := bytes.Clone(buf)
		require.NoError(t, <-sent)
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			// The rest of the message may still be coming off the sockets.
			assert.Never(t, func() bool { return !bytes.Equal(snapshot, buf) }, 20*time.Millisecond, time.Millisecond,
				"buffer written after Recv returned")
		} else {
			assert.True(t, bytes.Equal(msg, buf))
		}
	}
	require.NoError(t, eps[0].Send(ctx, 1, 99, []byte("ok")))
	got := make([]byte, 2)
	require.NoError(t, eps[1].Recv(ctx, 0, 99, got))
	assert.Equal(t, "ok", string(got))
}

// TestMalformedFrameFailsLink: a peer that sends a bad frame header loses
// its link; the receiver's operations with it fail with a PeerError.
func TestMalformedFrameFailsLink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps := connectAll(t, 3, Config{})
	raw := eps[0].(*Endpoint).links[1].Load().streams[0].conn
	var bad [headerSize]byte
	encodeHeader(bad[:], frameHeader{Kind: 9, FragLen: 1, MsgLen: 1})
	_, err := raw.Write(bad[:])
	require.NoError(t, err)

	var pe *transport.PeerError
	err = eps[1].Recv(ctx, 0, 1, make([]byte, 1))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.Peer)
	assert.ErrorIs(t, err, errBadFrame)
	// Rank 1's link to rank 2 is untouched.
	require.NoError(t, eps[2].Send(ctx, 1, 1, []byte("x")))
	require.NoError(t, eps[1].Recv(ctx, 2, 1, make([]byte, 1)))
}

// TestDeadPeerFailsPendingSendPromptly: a send blocked because the peer
// stopped reading fails as soon as the peer's sockets close.
func TestPeerDeathDuringTransfer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps := connectAll(t, 2, Config{StreamsPerPeer: 2})
	big := make([]byte, 64<<20)
	recvErr := make(chan error, 1)
	go func() { recvErr <- eps[0].Recv(ctx, 1, 5, big) }()
	sendErr := make(chan error, 1)
	go func() { sendErr <- eps[0].Send(ctx, 1, 6, big) }()
	transporttest.WaitPosted(t, eps[0], 1, 5)     // the receive is pending
	transporttest.WaitArrived(t, eps[1], 0, 6, 1) // the send is under way
	start := time.Now()
	require.NoError(t, eps[1].Close())
	var pe *transport.PeerError
	require.ErrorAs(t, <-recvErr, &pe)
	assert.Equal(t, 1, pe.Peer)
	if err := <-sendErr; err != nil { // the send may have finished before the close
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, 1, pe.Peer)
	}
	assert.Less(t, time.Since(start), time.Second)
}

// TestCloseReleasesGoroutines: after Close the goroutine count returns to
// what it was before the endpoints existed.
func TestCloseReleasesGoroutines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := runtime.NumGoroutine()
	ls, addrs := listenAll(t, 3)
	eps := make([]transport.Endpoint, 3)
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			var err error
			eps[i], err = Connect(ctx, ls[i], i, addrs, Config{Secret: testSecret, StreamsPerPeer: 2})
			errs <- err
		}()
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
	// Traffic, a pending receive and a buffered unexpected message.
	require.NoError(t, eps[0].Send(ctx, 1, 1, make([]byte, 1<<20)))
	require.NoError(t, eps[1].Recv(ctx, 0, 1, make([]byte, 1<<20)))
	require.NoError(t, eps[2].Send(ctx, 0, 3, []byte("unread")))
	pending := make(chan error, 1)
	go func() { pending <- eps[2].Recv(ctx, 1, 2, make([]byte, 8)) }()
	for _, e := range eps {
		require.NoError(t, e.Close())
	}
	require.Error(t, <-pending)
	// Polled by hand: Eventually runs its condition in a goroutine of its own.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: before %d, now %d:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}

// TestSendCancelledMidMessage: a send that gives up after the start of a
// multi-frame message has gone out fails the link, so the receiver is told
// instead of waiting for the rest forever.
func TestSendCancelledMidMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps := connectAll(t, 2, Config{MaxFrameBytes: 4 << 10})
	l := eps[0].(*Endpoint).links[1].Load()
	short, stop := context.WithCancel(ctx)
	stop()
	// Cancelled before anything is written: the link survives.
	require.ErrorIs(t, eps[0].Send(short, 1, 1, make([]byte, 1<<20)), context.Canceled)
	require.False(t, l.isDead())

	// Cancelled between frames of a message: the link fails on both sides.
	err := l.abandonIfCancelled(&sendCtxError{peer: 1, err: context.Canceled})
	require.ErrorIs(t, err, context.Canceled)
	var pe *transport.PeerError
	require.ErrorAs(t, eps[1].Recv(ctx, 0, 1, make([]byte, 8)), &pe)
	assert.Equal(t, 0, pe.Peer)
}
