package pgbackend

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport/symm"
)

// allocWindows allocates bytes of symmetric memory on every communicator
// of cs (ranks on hosts), in a temporary directory, each window served to
// the other hosts' ranks; they are closed at cleanup.
func allocWindows(t *testing.T, cs []*Communicator, hosts []string, bytes int) ([]*symm.Window, []symm.Remote) {
	t.Helper()
	ws := make([]*symm.Window, len(cs))
	remotes := make([]symm.Remote, len(cs))
	dir := t.TempDir()
	eachRank(cs, func(c *Communicator) {
		exchange := func(ctx context.Context, send, recv []byte) error {
			w, err := c.AllGather(send, recv, StreamDefault)
			if err != nil {
				return err
			}
			return w.Wait(ctx, 10*time.Second)
		}
		remote := c.SymmRemote()
		w, err := symm.Alloc(context.Background(), symm.Spec{
			Rank: c.Rank(), Size: c.Size(), Bytes: bytes, HostID: hosts[c.Rank()], Dir: dir, Timeout: 10 * time.Second, Remote: remote,
		}, exchange)
		require.NoError(t, err)
		c.ServeSymm(remote, w)
		ws[c.Rank()], remotes[c.Rank()] = w, remote
	})
	t.Cleanup(func() {
		for r, w := range ws {
			cs[r].StopSymm(remotes[r])
			_ = w.Close()
		}
	})
	return ws, remotes
}

// TestSymmAcrossHosts: put, get, signal and barrier reach ranks of other
// hosts through their servers: a put's data is in the target's region when
// it returns, a signal after a put is seen after the data, get reads what
// the owner wrote, a barrier spans the hosts; bad spans are refused before
// anything travels, and a window the target no longer serves is refused.
func TestSymmAcrossHosts(t *testing.T) {
	hosts := []string{"a", "a", "b"}
	cfg := testConfig()
	cfg.Timeout = 2 * time.Second // how long a server waits for a window it does not serve
	cs := connectAll(t, hosts, cfg)
	ws, remotes := allocWindows(t, cs, hosts, 1<<20)
	const off, n = 4096, 300000
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*31 + 7)
	}
	// Rank 0 puts into rank 2's region and signals; rank 2 waits and reads.
	errs := make([]error, 3)
	eachRank(cs, func(c *Communicator) {
		w := ws[c.Rank()]
		switch c.Rank() {
		case 0:
			if errs[0] = w.Put(data, 2, off); errs[0] == nil {
				errs[0] = w.Signal(2)
			}
		case 2:
			if errs[2] = w.WaitSignal(context.Background(), 0, 10*time.Second); errs[2] == nil {
				region, _ := w.Region(2)
				assert.Equal(t, data, region[off:off+n], "rank 2's region after rank 0's put and signal")
			}
		}
	})
	require.NoError(t, errs[0])
	require.NoError(t, errs[2])

	// Rank 1 gets it back from rank 2; rank 2 gets rank 1's region.
	got := make([]byte, n)
	require.NoError(t, ws[1].Get(got, 2, off))
	assert.Equal(t, data, got)
	own, _ := ws[1].Region(1)
	copy(own[:100], data[:100])
	back := make([]byte, 100)
	require.NoError(t, ws[2].Get(back, 1, 0))
	assert.Equal(t, data[:100], back)

	// A barrier across hosts.
	eachRank(cs, func(c *Communicator) {
		require.NoError(t, ws[c.Rank()].Barrier(context.Background(), 10*time.Second), "rank %d", c.Rank())
	})

	// Spans outside the region fail before anything is sent; views of
	// another host's memory stay impossible.
	require.ErrorIs(t, ws[0].Put(data, 2, 1<<20-10), symm.ErrInvalid)
	require.ErrorIs(t, ws[0].Get(got, 2, -1), symm.ErrInvalid)
	_, err := ws[0].Region(2)
	require.ErrorIs(t, err, symm.ErrCrossHost)

	// A window rank 2 no longer serves: refused within its op timeout.
	cs[2].StopSymm(remotes[2])
	err = ws[0].Put(data[:8], 2, 0)
	require.Error(t, err)
	assert.ErrorIs(t, err, errSymmRefused)
}
