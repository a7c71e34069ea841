package shm

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/cma"
)

// exchangeLarge sends count messages of n bytes from eps[0] to eps[1], and
// checks them. Message i is sent after its receive is posted when
// postedFirst(i); else the receive comes once the message has been handed
// over (stored, or announced through the ring) and its Send returned.
func exchangeLarge(t *testing.T, eps []*Endpoint, n, count int, postedFirst func(i int) bool) {
	ctx := testContext(t)
	for i := range count {
		msg := pattern(n, byte(i))
		got := make([]byte, n)
		if postedFirst(i) {
			var wg sync.WaitGroup
			wg.Go(func() { assert.NoError(t, eps[1].Recv(ctx, 0, 5, got)) })
			waitPosted(t, eps[1], 0, 5)
			require.NoError(t, eps[0].Send(ctx, 1, 5, msg))
			wg.Wait()
		} else {
			require.NoError(t, eps[0].Send(ctx, 1, 5, msg))
			require.NoError(t, eps[1].Recv(ctx, 0, 5, got))
		}
		require.True(t, bytes.Equal(msg, got), "message %d differs", i)
	}
}

// waitPosted waits until e has a receive posted for (peer, tag).
func waitPosted(t *testing.T, e *Endpoint, peer int, tag transport.Tag) {
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		q := e.queues[key{peer, tag}]
		return q != nil && len(q.posted) > 0
	}, 10*time.Second, 100*time.Microsecond)
}

func always(int) bool { return true }
func never(int) bool  { return false }

// TestCMASingleCopy: a large message whose receive is posted is read
// straight into it.
func TestCMASingleCopy(t *testing.T) {
	eps := connectAll(t, 2, Config{Dir: shmDir(t)}, true)
	exchangeLarge(t, eps, 3<<20+1, 3, always)
	assert.Equal(t, uint64(3), eps[0].cmaSent.Load())
	assert.Equal(t, uint64(3), eps[1].cmaReceived.Load())
	assert.Zero(t, eps[1].cmaRefusals.Load())
	assert.Zero(t, eps[1].cmaNacks.Load())
}

// TestCMAUnexpectedUsesRing: a large message nobody waits for goes through
// the ring after a short wait, without blocking the sender on the receive.
func TestCMAUnexpectedUsesRing(t *testing.T) {
	eps := connectAll(t, 2, Config{Dir: shmDir(t)}, true)
	exchangeLarge(t, eps, 1<<20+5, 4, func(i int) bool { return i%2 == 1 })
	assert.Equal(t, uint64(4), eps[0].cmaSent.Load())
	assert.Equal(t, uint64(2), eps[1].cmaNacks.Load())
	assert.Equal(t, uint64(2), eps[1].cmaReceived.Load(), "the offer is renewed for the next message")
}

func TestCMABelowThresholdUsesRing(t *testing.T) {
	eps := connectAll(t, 2, Config{Dir: shmDir(t), CMAThreshold: 1 << 20}, true)
	exchangeLarge(t, eps, 1<<20-1, 2, always)
	assert.Zero(t, eps[0].cmaSent.Load())
}

// TestCMAFallback forces the receiver's reads to fail as a kernel refusing
// process_vm_readv would: the first large message falls back to the ring,
// and later ones do not try single-copy again.
func TestCMAFallback(t *testing.T) {
	dir := shmDir(t)
	eps := connectAll(t, 2, Config{Dir: dir, forceCMARefusal: true}, true)
	exchangeLarge(t, eps, 1<<20+7, 3, always)
	exchangeLarge(t, eps, 1<<20+7, 1, never)
	assert.Equal(t, uint64(1), eps[0].cmaSent.Load(), "one attempt, then the ring only")
	assert.Equal(t, uint64(1), eps[1].cmaRefusals.Load())
	assert.Zero(t, eps[1].cmaReceived.Load())
}

// TestCMASendTimeout: a sender that gives up while its buffer is offered
// breaks the link (the receiver could otherwise deliver bytes the caller
// changed after Send returned), on both sides.
func TestCMASendTimeout(t *testing.T) {
	eps := connectAll(t, 2, Config{Dir: shmDir(t)}, false)
	ctx := testContext(t)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, eps[0].Send(short, 1, 1, make([]byte, 1<<20)), context.DeadlineExceeded)
	var pe *transport.PeerError
	require.ErrorAs(t, eps[0].Send(ctx, 1, 2, []byte("x")), &pe)
	assert.ErrorIs(t, pe, errLinkAborted)

	eps[1].startReader()
	err := eps[1].Recv(ctx, 0, 1, make([]byte, 1<<20))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.Peer)
	assert.ErrorIs(t, err, errLinkAborted)
}

// TestCMASendSucceedsWhenReceiverClosesAtOnce: a receiver that closes its
// endpoint the moment its single-copy receive completes (a rank whose op
// just ended) never fails the sender of that message: the offer's slot is
// free before the receive completes. The receive sleeps first, so that the
// reader goroutine, not the receiving one, takes the message (the path
// where completion and freeing the slot run on different goroutines). The
// window is a few instructions wide: this guards the order, it seldom
// catches its loss.
func TestCMASendSucceedsWhenReceiverClosesAtOnce(t *testing.T) {
	if !cma.Supported() {
		t.Skip("process_vm_readv is not allowed here")
	}
	const n = minCMAThreshold
	for i := range 40 {
		eps := connectAll(t, 2, Config{Dir: shmDir(t)}, true)
		ctx := testContext(t)
		data := pattern(n, byte(i))
		buf := make([]byte, n)
		received := make(chan error, 1)
		go func() {
			err := eps[1].Recv(ctx, 0, 7, buf)
			if err == nil {
				err = eps[1].Close()
			}
			received <- err
		}()
		waitPosted(t, eps[1], 0, 7)
		time.Sleep(2 * time.Millisecond) // past the receive's spin: it sleeps
		require.NoError(t, eps[0].Send(ctx, 1, 7, data), "iteration %d: the message was delivered", i)
		require.NoError(t, <-received)
		require.Equal(t, data, buf)
		require.Equal(t, uint64(1), eps[0].cmaSent.Load(), "iteration %d: single-copy", i)
	}
}
