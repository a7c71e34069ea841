package symm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// memExchange is an all-gather among n goroutines, one call per rank per
// round.
type memExchange struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	round int
	got   int
	buf   []byte
	out   []byte
}

func newMemExchange(n int) *memExchange {
	e := &memExchange{n: n}
	e.cond = sync.NewCond(&e.mu)
	return e
}

// forRank is rank's Exchange.
func (e *memExchange) forRank(rank int) Exchange {
	return func(ctx context.Context, send, recv []byte) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.buf == nil {
			e.buf = make([]byte, e.n*len(send))
		}
		copy(e.buf[rank*len(send):], send)
		round := e.round
		e.got++
		if e.got == e.n {
			e.out, e.buf, e.got = e.buf, nil, 0
			e.round++
			e.cond.Broadcast()
		}
		for e.round == round {
			e.cond.Wait()
		}
		copy(recv, e.out)
		return nil
	}
}

// allocAll allocates bytes on n goroutine ranks with the given host ids
// (nil: one host) in dir and returns their windows, closed at cleanup.
func allocAll(t *testing.T, n, bytes int, hosts []string, dir string) []*Window {
	t.Helper()
	ex := newMemExchange(n)
	ws := make([]*Window, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		host := "h"
		if hosts != nil {
			host = hosts[r]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[r], errs[r] = Alloc(context.Background(), Spec{Rank: r, Size: n, Bytes: bytes, HostID: host, Dir: dir, Timeout: 10 * time.Second}, ex.forRank(r))
		}()
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	t.Cleanup(func() {
		for _, w := range ws {
			_ = w.Close()
		}
	})
	return ws
}

// requireEmpty checks that dir holds no file of this package.
func requireEmpty(t *testing.T, dir string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"))
	require.NoError(t, err)
	require.Empty(t, left, "segment files left in %s", dir)
}

func parallel(n int, f func(r int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[r] = fmt.Errorf("panic: %v", p)
				}
			}()
			errs[r] = f(r)
		}()
	}
	wg.Wait()
	return errs
}

func tempDir(t *testing.T) string {
	t.Helper()
	// tmpfs where there is one, as in use; any directory works.
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "symm-test-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}
