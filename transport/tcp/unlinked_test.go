package tcp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openSockets counts the TCP connections an endpoint holds.
func openSockets(e *Endpoint) int {
	n := 0
	for i := range e.links {
		if l := e.links[i].Load(); l != nil {
			n += len(l.streams)
		}
	}
	return n
}

func TestUnlinkedRanksGetNoConnection(t *testing.T) {
	// Ranks 0-2 share a "host" (Unlinked to each other), rank 3 is elsewhere:
	// each of 0-2 links to rank 3 only, and rank 3 to all three.
	const size = 4
	unlinked := func(r int) []bool {
		u := make([]bool, size)
		if r < 3 {
			u[0], u[1], u[2] = true, true, true
		}
		return u
	}
	ls, addrs := listenAll(t, size)
	eps := make([]*Endpoint, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		cfg := Config{Secret: testSecret, ConnectTimeout: 10 * time.Second, StreamsPerPeer: 2, Unlinked: unlinked(r)}
		wg.Go(func() {
			ep, err := Connect(context.Background(), ls[r], r, addrs, cfg)
			errs[r] = err
			if err == nil {
				eps[r] = ep.(*Endpoint)
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		t.Cleanup(func() { _ = eps[r].Close() })
	}
	for r := range 3 {
		assert.Equal(t, 2, openSockets(eps[r]), "rank %d: two streams to rank 3 only", r)
	}
	assert.Equal(t, 6, openSockets(eps[3]))

	ctx := context.Background()
	require.NoError(t, eps[3].Send(ctx, 1, 5, []byte("hi")))
	got := make([]byte, 2)
	require.NoError(t, eps[1].Recv(ctx, 3, 5, got))
	assert.Equal(t, "hi", string(got))
	err := eps[0].Send(ctx, 1, 5, []byte("no"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no TCP link to rank 1")
	require.Error(t, eps[2].Recv(ctx, 0, 5, got), "a receive from an unlinked rank fails, never waits")
}

func TestRanksThatDisagreeOnALinkFailSoon(t *testing.T) {
	// Rank 0 marks rank 1 unlinked, rank 1 does not: rank 0 needs no link
	// and returns at once; rank 1's dials are refused or find the listener
	// closed, and it fails within the unreachable bound, not the timeout.
	ls, addrs := listenAll(t, 2)
	cfg0 := Config{Secret: testSecret, ConnectTimeout: 60 * time.Second, Unlinked: []bool{false, true}}
	cfg1 := Config{Secret: testSecret, ConnectTimeout: 60 * time.Second, UnreachableTimeout: time.Second}
	var wg sync.WaitGroup
	var err0, err1 error
	start := time.Now()
	wg.Go(func() {
		ep, err := Connect(context.Background(), ls[0], 0, addrs, cfg0)
		if err == nil {
			_ = ep.Close()
		}
		err0 = err
	})
	wg.Go(func() { _, err1 = Connect(context.Background(), ls[1], 1, addrs, cfg1) })
	wg.Wait()
	require.NoError(t, err0)
	require.Error(t, err1)
	assert.Less(t, time.Since(start), 30*time.Second, err1.Error())
	refused := []string{"refused", "unreachable", "no link"}
	msg := err1.Error()
	found := false
	for _, r := range refused {
		found = found || strings.Contains(msg, r)
	}
	assert.True(t, found, msg)
}
