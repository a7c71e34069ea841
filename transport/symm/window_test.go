package symm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/internal/gather"
)

func TestAllocPutGetRegion(t *testing.T) {
	for _, tc := range []struct {
		ranks, bytes int
	}{{2, 64}, {3, 4096}, {3, 1 << 20}, {2, 0}, {1, 100}} {
		t.Run(fmt.Sprintf("%dranks-%dB", tc.ranks, tc.bytes), func(t *testing.T) {
			dir := tempDir(t)
			ws := allocAll(t, tc.ranks, tc.bytes, nil, dir)
			requireEmpty(t, dir) // unlinked once every peer mapped it
			n := tc.ranks
			errs := parallel(n, func(r int) error {
				w := ws[r]
				if w.Rank() != r || w.Size() != n || w.Bytes() != tc.bytes {
					return fmt.Errorf("rank %d: window says rank %d size %d bytes %d", r, w.Rank(), w.Size(), w.Bytes())
				}
				half := tc.bytes / 2
				if err := w.Put(bytes.Repeat([]byte{byte(r + 1)}, half), (r+1)%n, 0); err != nil {
					return err
				}
				if err := w.Barrier(context.Background(), 0); err != nil {
					return err
				}
				prev := (r + n - 1) % n
				own, err := w.Region(r)
				if err != nil {
					return err
				}
				if !bytes.Equal(own[:half], bytes.Repeat([]byte{byte(prev + 1)}, half)) {
					return fmt.Errorf("rank %d: region not written by rank %d", r, prev)
				}
				got := make([]byte, half)
				if err := w.Get(got, (r+1)%n, 0); err != nil {
					return err
				}
				if !bytes.Equal(got, bytes.Repeat([]byte{byte(r + 1)}, half)) {
					return fmt.Errorf("rank %d: get read %v", r, got[:min(8, half)])
				}
				peer, err := w.Region((r + 1) % n)
				if err != nil {
					return err
				}
				if !bytes.Equal(peer[:half], got) {
					return fmt.Errorf("rank %d: the mapped region differs from get", r)
				}
				return w.Barrier(context.Background(), 0)
			})
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	const size = 256
	ws := allocAll(t, 2, size, nil, tempDir(t))
	w := ws[0]
	region, err := ws[1].Region(1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		call     func() error
		want     error
		contains string
	}{
		{"put past the end", func() error { return w.Put(make([]byte, 8), 1, size-4) }, ErrInvalid, "outside the region"},
		{"put too large", func() error { return w.Put(make([]byte, size+1), 1, 0) }, ErrInvalid, "outside"},
		{"put negative offset", func() error { return w.Put(make([]byte, 1), 1, -1) }, ErrInvalid, "outside"},
		{"get past the end", func() error { return w.Get(make([]byte, 2), 1, size-1) }, ErrInvalid, "outside"},
		{"get offset past the end", func() error { return w.Get(nil, 1, size+1) }, ErrInvalid, "outside"},
		{"put rank out of range", func() error { return w.Put(make([]byte, 1), 2, 0) }, ErrInvalid, "rank 2 out of range"},
		{"get negative rank", func() error { return w.Get(make([]byte, 1), -1, 0) }, ErrInvalid, "rank -1 out of range"},
		{"region rank out of range", func() error { _, err := w.Region(5); return err }, ErrInvalid, "out of range"},
		{"signal rank out of range", func() error { return w.Signal(2) }, ErrInvalid, "out of range"},
		{"wait rank out of range", func() error { return w.WaitSignal(context.Background(), 3, time.Second) }, ErrInvalid, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := bytes.Clone(region)
			err := tc.call()
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.contains)
			assert.Equal(t, before, region, "nothing written")
		})
	}
	// An exact fit at the end is fine.
	require.NoError(t, w.Put([]byte{7, 8}, 1, size-2))
	assert.Equal(t, []byte{7, 8}, region[size-2:])
	require.NoError(t, w.Put(nil, 1, size))
}

func TestSizesMustAgree(t *testing.T) {
	ex := gather.New(2)
	dir := tempDir(t)
	errs := parallel(2, func(r int) error {
		_, err := Alloc(context.Background(), Spec{Rank: r, Size: 2, Bytes: 100 * (r + 1), HostID: "h", Dir: dir, Timeout: time.Second}, ex.ForRank(r))
		return err
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrInvalid, "rank %d", r)
		assert.Contains(t, err.Error(), "same size")
	}
	requireEmpty(t, dir)
}

func TestSignals(t *testing.T) {
	ws := allocAll(t, 3, 64, nil, tempDir(t))
	ctx := context.Background()
	// Signals sent before the wait count; n signals match n waits.
	require.NoError(t, ws[1].Signal(0))
	require.NoError(t, ws[1].Signal(0))
	require.NoError(t, ws[2].Signal(0))
	require.NoError(t, ws[0].WaitSignal(ctx, 1, time.Second))
	require.NoError(t, ws[0].WaitSignal(ctx, 1, time.Second))
	require.NoError(t, ws[0].WaitSignal(ctx, 2, time.Second))
	// None left: the next wait times out, naming both ranks.
	start := time.Now()
	err := ws[0].WaitSignal(ctx, 1, 50*time.Millisecond)
	require.ErrorIs(t, err, ErrTimeout)
	assert.Contains(t, err.Error(), "rank 0 waited for a signal from rank 1")
	assert.Less(t, time.Since(start), 2*time.Second)

	// A signal to a sleeping waiter wakes it, with the data put before it.
	done := make(chan error, 1)
	go func() {
		if err := ws[2].WaitSignal(ctx, 0, 5*time.Second); err != nil {
			done <- err
			return
		}
		got := make([]byte, 4)
		if err := ws[2].Get(got, 2, 0); err != nil {
			done <- err
			return
		}
		if !bytes.Equal(got, []byte{1, 2, 3, 4}) {
			done <- fmt.Errorf("data %v", got)
			return
		}
		done <- nil
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, ws[0].Put([]byte{1, 2, 3, 4}, 2, 0))
	require.NoError(t, ws[0].Signal(2))
	require.NoError(t, <-done)
}

func TestWaitSignalClosedPeer(t *testing.T) {
	ws := allocAll(t, 2, 64, nil, tempDir(t))
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = ws[1].Close()
	}()
	start := time.Now()
	err := ws[0].WaitSignal(context.Background(), 1, 10*time.Second)
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Peer)
	assert.Contains(t, err.Error(), "rank 1")
	assert.Contains(t, err.Error(), "died or closed")
	assert.Less(t, time.Since(start), 2*time.Second)
	// After Close, every operation of the closed window fails.
	require.ErrorIs(t, ws[1].Put([]byte{1}, 0, 0), ErrClosed)
	require.NoError(t, ws[1].Close())
}

func TestBarrier(t *testing.T) {
	ws := allocAll(t, 3, 8, nil, tempDir(t))
	errs := parallel(3, func(r int) error {
		for i := range 50 {
			// Each rank writes its slot of every peer, then all read.
			for p := range 3 {
				if err := ws[r].Put([]byte{byte(i)}, p, r); err != nil {
					return err
				}
			}
			if err := ws[r].Barrier(context.Background(), 5*time.Second); err != nil {
				return err
			}
			own, _ := ws[r].Region(r)
			for p := range 3 {
				if own[p] != byte(i) {
					return fmt.Errorf("rank %d round %d: slot %d holds %d", r, i, p, own[p])
				}
			}
			if err := ws[r].Barrier(context.Background(), 5*time.Second); err != nil {
				return err
			}
		}
		return nil
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	// A barrier some rank does not enter times out.
	err := ws[0].Barrier(context.Background(), 50*time.Millisecond)
	require.ErrorIs(t, err, ErrTimeout)
	assert.Contains(t, err.Error(), "waited for rank 1")
}

func TestCrossHostPeers(t *testing.T) {
	dir := tempDir(t)
	ws := allocAll(t, 3, 64, []string{"a", "a", "b"}, dir)
	requireEmpty(t, dir)
	assert.True(t, ws[0].Local(1))
	assert.False(t, ws[0].Local(2))
	assert.True(t, ws[2].Local(2))
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"put", func() error { return ws[0].Put([]byte{1}, 2, 0) }},
		{"get", func() error { return ws[2].Get([]byte{1}, 0, 0) }},
		{"region", func() error { _, err := ws[0].Region(2); return err }},
		{"signal", func() error { return ws[1].Signal(2) }},
		{"wait", func() error { return ws[2].WaitSignal(context.Background(), 1, time.Second) }},
		{"barrier", func() error { return ws[0].Barrier(context.Background(), time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, ErrCrossHost)
			assert.Contains(t, err.Error(), "on host")
		})
	}
	// The ranks of one host still share their memory.
	require.NoError(t, ws[0].Put([]byte{9}, 1, 0))
	r1, err := ws[1].Region(1)
	require.NoError(t, err)
	assert.Equal(t, byte(9), r1[0])
}

func TestAllocRemovesDeadPeersFile(t *testing.T) {
	dir := tempDir(t)
	// Rank 1 "died" after creating its file: it exists and nobody holds
	// its lock. Rank 0 gives up at its timeout and removes both files.
	nonce := make([]byte, 16)
	ex := func(ctx context.Context, send, recv []byte) error {
		copy(send[8:24], nonce)
		copy(recv, send)
		copy(recv[len(send):], send)
		recv[len(send)+56] = 0
		path := segmentPath(dir, nonce, 1)
		return os.WriteFile(path, make([]byte, segmentSize(2, 64)), 0o600)
	}
	_, err := Alloc(context.Background(), Spec{Rank: 0, Size: 2, Bytes: 64, HostID: "h", Dir: dir, Timeout: 100 * time.Millisecond}, ex)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Contains(t, err.Error(), "rank 1")
	requireEmpty(t, dir)
}
