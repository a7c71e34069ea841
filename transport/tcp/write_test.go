package tcp

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteStopsWhenCtxEnds: a frame that cannot go out because the peer
// reads nothing returns when ctx ends, having written part of it, whether
// it took the fast window first (small) or armed the cancellation at once
// (large); with room, both go out whole.
func TestWriteStopsWhenCtxEnds(t *testing.T) {
	cases := []struct {
		name string
		size int
	}{
		{"small frames fill the buffer", fastWriteMaxBytes},
		{"large frame", 64 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, _ := tcpPair(t) // the other end never reads
			s := &stream{conn: w}
			body := make([]byte, c.size)
			// The context starts after the allocation, and leaves the first
			// write room on a loaded machine (a 64 MiB buffer under the race
			// detector can take longer than a short deadline to fill).
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			var err error
			var total int64
			for err == nil && time.Since(start) < 10*time.Second {
				s.wbufs = net.Buffers{body}
				var n int64
				n, err = s.write(ctx, len(body))
				total += n
			}
			require.Error(t, err)
			// The write that was cut reports the socket's deadline; a call
			// that starts after ctx ended reports ctx's error.
			assert.True(t, errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded), "%v", err)
			assert.Less(t, time.Since(start), 5*time.Second, "the write outlived its context")
			assert.Positive(t, total)
		})
	}
}

// TestWriteWholeFrames: with a reading peer, small and large frames go out
// whole under a context with a deadline.
func TestWriteWholeFrames(t *testing.T) {
	w, r := tcpPair(t)
	got := make(chan int64, 1)
	go func() {
		var n int64
		buf := make([]byte, 1<<20)
		for {
			m, err := r.Read(buf)
			n += int64(m)
			if err != nil {
				got <- n
				return
			}
		}
	}()
	s := &stream{conn: w}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var want int64
	for _, size := range []int{1, fastWriteMaxBytes, fastWriteMaxBytes + 1, 8 << 20} {
		s.wbufs = net.Buffers{make([]byte, size)}
		n, err := s.write(ctx, size)
		require.NoError(t, err, "%d-byte frame", size)
		require.EqualValues(t, size, n)
		want += int64(size)
	}
	require.NoError(t, w.CloseWrite())
	assert.Equal(t, want, <-got)
}
