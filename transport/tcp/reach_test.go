package tcp

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// The verdicts on an address follow from the attempts made on it.
func TestReachVerdicts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	refused := fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	noRoute := fmt.Errorf("dial: %w", syscall.EHOSTUNREACH)
	const window = 5 * time.Second
	type attempt struct {
		ok         bool
		start, end time.Duration // after t0
		err        error
	}
	tests := []struct {
		name     string
		attempts []attempt
		want     reachVerdict // after the last attempt
	}{
		{"first refusal", []attempt{{start: 0, end: 0, err: refused}}, keepTrying},
		{"refused for less than the window", []attempt{{end: 0, err: refused}, {start: 4 * time.Second, end: 4 * time.Second, err: refused}}, keepTrying},
		{"refused for the window", []attempt{{end: 0, err: refused}, {start: 5 * time.Second, end: 5 * time.Second, err: refused}}, unreachable},
		{"one attempt without an answer for the window", []attempt{{start: 0, end: window, err: context.DeadlineExceeded}}, unreachable},
		{"no route for the window", []attempt{{end: time.Second, err: noRoute}, {start: 3 * time.Second, end: 5 * time.Second, err: noRoute}}, unreachable},
		{"a success restarts the window", []attempt{
			{end: 0, err: noRoute}, {ok: true, start: 3 * time.Second}, {start: 4 * time.Second, end: 4 * time.Second, err: noRoute},
			{start: 8 * time.Second, end: 8 * time.Second, err: noRoute},
		}, keepTrying},
		{"refused after taking connections", []attempt{{ok: true}, {start: time.Second, end: time.Second, err: refused}}, gaveUp},
		{"unreachable after taking connections is not a refusal", []attempt{{ok: true}, {start: time.Second, end: time.Second, err: noRoute}}, keepTrying},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r reach
			got := keepTrying
			for _, a := range tc.attempts {
				if a.ok {
					r.succeeded()
					got = keepTrying
					continue
				}
				got = r.failed(t0.Add(a.start), t0.Add(a.end), a.err, window, false)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// connectOne runs rank's Connect with cfg and a deadline far below
// ConnectTimeout: an error that is not ErrUnreachable means the early
// verdict did not come.
func connectOne(l *Listener, rank int, addrs []string, cfg Config) (transport.Endpoint, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Connect(ctx, l, rank, addrs, cfg)
}

// A dialer whose peer's address takes no connections fails with
// ErrUnreachable naming the peer and the address, long before
// ConnectTimeout.
func TestConnectUnreachableDialer(t *testing.T) {
	ls, addrs := listenAll(t, 2)
	require.NoError(t, ls[0].Close()) // nothing listens at rank 0's address any more
	cfg := Config{Secret: testSecret, ConnectTimeout: 10 * time.Minute, UnreachableTimeout: 200 * time.Millisecond}
	_, err := connectOne(ls[1], 1, addrs, cfg)
	require.ErrorIs(t, err, ErrUnreachable)
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.Peer)
	assert.Contains(t, err.Error(), "cannot reach rank 0 at "+addrs[0])
	assert.Contains(t, err.Error(), "connection refused")
}

// A rank waiting for a rank above it whose address takes no connections
// fails with ErrUnreachable too: it probes the addresses of the ranks that
// have not linked with it.
func TestConnectUnreachableAcceptor(t *testing.T) {
	ls, addrs := listenAll(t, 2)
	require.NoError(t, ls[1].Close())
	cfg := Config{Secret: testSecret, ConnectTimeout: 10 * time.Minute, UnreachableTimeout: 200 * time.Millisecond}
	_, err := connectOne(ls[0], 0, addrs, cfg)
	require.ErrorIs(t, err, ErrUnreachable)
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Peer)
	assert.Contains(t, err.Error(), "rank 1 has not linked with this rank")
	assert.Contains(t, err.Error(), addrs[1])
}

// When only one direction fails (rank 1 cannot reach rank 0's address, rank
// 0 reaches rank 1's), both ranks fail early: rank 1 by dialing, rank 0
// because rank 1's listener closes once rank 1 has given up.
func TestConnectOneWayUnreachableFailsBothRanks(t *testing.T) {
	ls, addrs := listenAll(t, 2)
	dead, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, dead.Close())
	seenBy1 := []string{dead.Addr(), addrs[1]} // rank 1 was told a wrong address for rank 0

	cfg0 := Config{Secret: testSecret, ConnectTimeout: 10 * time.Minute, UnreachableTimeout: 200 * time.Millisecond}
	cfg1 := cfg0
	cfg1.UnreachableTimeout = time.Second // rank 0's probes find rank 1 alive first
	errs := make([]error, 2)
	done := make(chan struct{})
	go func() {
		_, errs[0] = connectOne(ls[0], 0, addrs, cfg0)
		close(done)
	}()
	_, errs[1] = connectOne(ls[1], 1, seenBy1, cfg1)
	<-done
	for r, err := range errs {
		require.ErrorIs(t, err, ErrUnreachable, "rank %d", r)
		t.Logf("rank %d: %v", r, err)
	}
	assert.Contains(t, errs[1].Error(), "cannot reach rank 0 at "+dead.Addr())
	assert.Contains(t, errs[0].Error(), "rank 1 has not linked with this rank")
}

// A peer whose listener is open but which calls Connect late is waited for
// (up to ConnectTimeout), however long past UnreachableTimeout it comes; the
// probes it finds queued on its listener are closed without a log line.
func TestConnectWaitsForASlowPeer(t *testing.T) {
	ls, addrs := listenAll(t, 2)
	rec := &logRecorder{t: t}
	cfg := Config{Secret: testSecret, ConnectTimeout: time.Minute, UnreachableTimeout: 50 * time.Millisecond, Logf: rec.logf}
	type result struct {
		ep  transport.Endpoint
		err error
	}
	done := make(chan result, 1)
	go func() {
		ep, err := connectOne(ls[0], 0, addrs, cfg)
		done <- result{ep, err}
	}()
	// Rank 1 calls Connect 20 UnreachableTimeouts late, the lateness under
	// test; rank 0 probes its listener meanwhile.
	time.Sleep(20 * cfg.UnreachableTimeout)
	ep1, err := connectOne(ls[1], 1, addrs, cfg)
	require.NoError(t, err)
	defer ep1.Close()
	r := <-done
	require.NoError(t, r.err)
	defer r.ep.Close()
	assert.Zero(t, rec.count("refused connection"), "probes are not logged")

	ctx := context.Background()
	require.NoError(t, ep1.Send(ctx, 0, 1, []byte("late")))
	got := make([]byte, 4)
	require.NoError(t, r.ep.Recv(ctx, 1, 1, got))
	assert.Equal(t, "late", string(got))
}
