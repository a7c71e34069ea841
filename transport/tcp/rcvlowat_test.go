package tcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

func TestLowatFor(t *testing.T) {
	cases := []struct{ remaining, want int }{
		{0, 1},
		{1, 1},
		{headerSize, 1},
		{lowatMinBytes - 1, 1},
		{lowatMinBytes, lowatMinBytes},
		{lowatMaxBytes - 1, lowatMaxBytes - 1},
		{lowatMaxBytes, lowatMaxBytes},
		{4 << 20, lowatMaxBytes},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, lowatFor(c.remaining), "remaining %d", c.remaining)
	}
}

// fakeSetter records the marks set and fails those listed in fail.
type fakeSetter struct {
	calls []int
	fail  map[int]bool
}

func (f *fakeSetter) set(v int) error {
	f.calls = append(f.calls, v)
	if f.fail[v] {
		return errors.New("setsockopt refused")
	}
	return nil
}

func TestRcvLowatPrepare(t *testing.T) {
	cases := []struct {
		name      string
		remaining []int // successive prepare calls
		fail      map[int]bool
		wantCalls []int
		wantErr   bool
		wantCur   int
	}{
		{"small reads never set it", []int{40, 100, 0, lowatMinBytes - 1}, nil, nil, false, 1},
		{"a large body raises then steps down", []int{1 << 20, 600 << 10, 200 << 10, 70 << 10, 10, 40}, nil,
			[]int{lowatMaxBytes, 200 << 10, 70 << 10, 1}, false, 1},
		{"unchanged mark costs no call", []int{1 << 20, 2 << 20, 300 << 10}, nil, []int{lowatMaxBytes}, false, lowatMaxBytes},
		{"a refused raise disables it", []int{1 << 20, 100 << 10, 40, 1 << 20}, map[int]bool{lowatMaxBytes: true},
			[]int{lowatMaxBytes}, false, 1},
		{"a refused lowering is an error", []int{1 << 20, 40}, map[int]bool{1: true}, []int{lowatMaxBytes, 1}, true, lowatMaxBytes},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSetter{fail: c.fail}
			r := newRcvLowat(f.set)
			var err error
			for _, n := range c.remaining {
				if err = r.prepare(n); err != nil {
					break
				}
			}
			assert.Equal(t, c.wantCalls, f.calls)
			assert.Equal(t, c.wantCur, r.cur)
			if c.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "SO_RCVLOWAT")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

func TestRcvLowatDisabledIsNoop(t *testing.T) {
	r := newRcvLowat(nil)
	require.NoError(t, r.prepare(1<<20))
	require.NoError(t, r.prepare(0))
}

// TestLowatIntegrity sends messages of many sizes around the mark's
// thresholds, striped and not, with the receive posted before and after
// the message arrives, each followed by a small message on another tag that
// must not wait behind a raised mark; every byte lands where it belongs.
func TestLowatIntegrity(t *testing.T) {
	configs := []Config{
		{},
		{StreamsPerPeer: 4, MaxFrameBytes: 64 << 10},
		{StreamsPerPeer: 3, MaxFrameBytes: 300_000}, // frames not a multiple of anything
	}
	sizes := []int{0, 1, headerSize, lowatMinBytes - 1, lowatMinBytes, lowatMinBytes + 1,
		lowatMaxBytes - 1, lowatMaxBytes, lowatMaxBytes + 1, 1<<20 + 3, 5<<20 + 7}
	for _, cfg := range configs {
		for _, posted := range []bool{true, false} {
			t.Run(fmt.Sprintf("streams=%d/frame=%d/posted=%v", cfg.StreamsPerPeer, cfg.MaxFrameBytes, posted), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				eps := connectAll(t, 2, cfg)
				for i, n := range sizes {
					exchangeChecked(ctx, t, eps, transport.Tag(2*i), n, byte(i), posted)
					exchangeChecked(ctx, t, eps, transport.Tag(2*i+1), 3, byte(100+i), posted)
				}
			})
		}
	}
}

// exchangeChecked sends n bytes from rank 0 to rank 1 and checks them.
// posted: rank 1 posts its receive first; otherwise the message arrives
// before the receive is posted.
func exchangeChecked(ctx context.Context, t *testing.T, eps []transport.Endpoint, tag transport.Tag, n int, seed byte, posted bool) {
	t.Helper()
	msg := payload(n, seed)
	got := make([]byte, n)
	recvd := make(chan error, 1)
	if posted {
		go func() { recvd <- eps[1].Recv(ctx, 0, tag, got) }()
		transporttest.WaitPosted(t, eps[1], 0, tag)
	}
	// An unexpected message lands in storage of its own, so the send
	// completes before the receive is posted.
	require.NoError(t, eps[0].Send(ctx, 1, tag, msg), "send %d bytes", n)
	if !posted {
		go func() { recvd <- eps[1].Recv(ctx, 0, tag, got) }()
	}
	require.NoError(t, <-recvd, "recv %d bytes", n)
	require.True(t, bytes.Equal(msg, got), "%d-byte message corrupt", n)
}
