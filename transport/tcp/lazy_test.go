package tcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// lazyGroup connects size ranks with lazy links.
func lazyGroup(t *testing.T, size, streams int) []*Endpoint {
	t.Helper()
	eps := connectAll(t, size, Config{Lazy: true, StreamsPerPeer: streams, UnreachableTimeout: time.Second})
	out := make([]*Endpoint, size)
	for i, e := range eps {
		out[i] = e.(*Endpoint)
	}
	return out
}

// exchange sends a distinct message along every (from, to) pair, all at
// once, and checks what arrives.
func exchange(t *testing.T, eps []*Endpoint, pairs [][2]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg := func(a, b int) []byte { return bytes.Repeat([]byte{byte(a*16 + b)}, 1000+a*7+b) }
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(pairs))
	for _, pr := range pairs {
		a, b := pr[0], pr[1]
		wg.Go(func() {
			if err := eps[a].Send(ctx, b, 9, msg(a, b)); err != nil {
				errs <- fmt.Errorf("send %d->%d: %w", a, b, err)
			}
		})
		wg.Go(func() {
			got := make([]byte, len(msg(a, b)))
			if err := eps[b].Recv(ctx, a, 9, got); err != nil {
				errs <- fmt.Errorf("recv %d->%d: %w", a, b, err)
			} else if !bytes.Equal(got, msg(a, b)) {
				errs <- fmt.Errorf("recv %d->%d: wrong bytes", a, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLazyLinksAreMadeOnFirstUseOnly(t *testing.T) {
	for _, streams := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d streams", streams), func(t *testing.T) {
			const size = 6
			eps := lazyGroup(t, size, streams)
			for r, e := range eps {
				assert.Zero(t, openSockets(e), "rank %d links nothing at Connect", r)
			}
			// A ring: every rank sends to the next, lower ranks first in half
			// the pairs (the doorbell) and higher ranks first in the other.
			var ring [][2]int
			for r := range size {
				ring = append(ring, [2]int{r, (r + 1) % size})
			}
			exchange(t, eps, ring)
			for r, e := range eps {
				assert.Equal(t, 2, e.Links(), "rank %d: links to its two ring neighbours only", r)
				assert.Equal(t, 2*streams, openSockets(e), "rank %d", r)
			}
			// Every pair, both ways, at once: crossed first uses make one link
			// per pair.
			var all [][2]int
			for a := range size {
				for b := range size {
					if a != b {
						all = append(all, [2]int{a, b})
					}
				}
			}
			exchange(t, eps, all)
			for r, e := range eps {
				assert.Equal(t, size-1, e.Links(), "rank %d", r)
				assert.Equal(t, (size-1)*streams, openSockets(e), "rank %d", r)
			}
		})
	}
}

func TestLazyReceiveAloneMakesTheLink(t *testing.T) {
	// Rank 0 only receives from rank 3 and rank 3 only receives from rank
	// 0's later send: a receive posted first still links, so that the
	// peer's death would reach it.
	eps := lazyGroup(t, 4, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- eps[0].Recv(ctx, 3, 1, make([]byte, 2)) }()
	require.Eventually(t, func() bool { return eps[0].Linked(3) && eps[3].Linked(0) }, 5*time.Second, time.Millisecond)
	require.NoError(t, eps[3].Send(ctx, 0, 1, []byte("ok")))
	require.NoError(t, <-done)
	assert.Equal(t, 1, eps[0].Links())
	assert.False(t, eps[1].Linked(0))
}

func TestLazyLinkToAClosedPeerFailsSoon(t *testing.T) {
	for _, from := range []int{0, 2} { // 0 rings rank 1's doorbell, 2 dials it
		t.Run(fmt.Sprintf("from rank %d", from), func(t *testing.T) {
			eps := lazyGroup(t, 3, 1)
			require.NoError(t, eps[1].Close())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			err := eps[from].Send(ctx, 1, 1, []byte("x"))
			var pe *transport.PeerError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, 1, pe.Peer)
			require.ErrorIs(t, err, ErrUnreachable)
			assert.Contains(t, err.Error(), "closed its endpoint or exited")
			assert.Less(t, time.Since(start), 5*time.Second)
			// The peer is failed for good: a receive fails at once too.
			require.ErrorAs(t, eps[from].Recv(ctx, 1, 2, make([]byte, 1)), &pe)
		})
	}
}

func TestLazyLinkWithADifferentSecretFails(t *testing.T) {
	for _, from := range []int{0, 1} { // 0 rings, 1 dials
		t.Run(fmt.Sprintf("from rank %d", from), func(t *testing.T) {
			ls, addrs := listenAll(t, 2)
			eps := make([]*Endpoint, 2)
			for r := range 2 {
				cfg := Config{Secret: testSecret, Lazy: true, ConnectTimeout: 20 * time.Second, Logf: t.Logf,
					Advice: func(err error) string { return " [set the same secret]" }}
				if r == 1 {
					cfg.Secret = []byte("another job")
				}
				ep, err := Connect(context.Background(), ls[r], r, addrs, cfg)
				require.NoError(t, err)
				eps[r] = ep.(*Endpoint)
				t.Cleanup(func() { _ = ep.Close() })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := eps[from].Send(ctx, 1-from, 1, []byte("x"))
			var pe *transport.PeerError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, 1-from, pe.Peer)
			assert.True(t, errors.Is(err, ErrBadSecret) || errors.Is(err, errBadAuth), "%v", err)
			assert.Contains(t, err.Error(), "[set the same secret]", "the caller's advice")
			assert.Zero(t, eps[0].Links()+eps[1].Links())
		})
	}
}

func TestLazyDoorbellFromAStrangerDialsNobody(t *testing.T) {
	eps := lazyGroup(t, 2, 1)
	// A stranger rings rank 1 claiming to be rank 0, without the secret.
	s := newSetup(0, 2, Config{Secret: []byte("stranger"), StreamsPerPeer: 1, MaxFrameBytes: defaultMaxFrameBytes}, context.Background(), func(int) bool { return true })
	conn, err := net.Dial("tcp", eps[1].lazy.addrs[1])
	require.NoError(t, err)
	_, err = s.dialHandshake(context.Background(), conn, 1, doorbellStream)
	_ = conn.Close()
	require.Error(t, err)
	time.Sleep(100 * time.Millisecond)
	assert.Zero(t, eps[1].Links(), "a stranger's doorbell makes no link")
	eps[1].lazy.mu.Lock()
	started := eps[1].lazy.started[0]
	eps[1].lazy.mu.Unlock()
	assert.False(t, started, "nor starts a dial")
	exchange(t, eps, [][2]int{{0, 1}, {1, 0}})
}

func TestLazyCloseReleasesAWaitingSend(t *testing.T) {
	// Rank 1's address takes TCP connections but never answers (a listener
	// nobody accepts on): rank 0's doorbell waits for the challenge.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	l0, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	ep, err := Connect(context.Background(), l0, 0, []string{l0.Addr(), ln.Addr().String()}, Config{Secret: testSecret, Lazy: true, ConnectTimeout: time.Minute})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- ep.Send(context.Background(), 1, 1, []byte("x")) }()
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, ep.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, transport.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release a Send waiting for its link")
	}
}
