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

	"github.com/hccl-go/hccl-go/transport/internal/gather"
)

// allocAll allocates bytes on n goroutine ranks with the given host ids
// (nil: one host) in dir and returns their windows, closed at cleanup.
func allocAll(t *testing.T, n, bytes int, hosts []string, dir string) []*Window {
	t.Helper()
	ex := gather.New(n)
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
			ws[r], errs[r] = Alloc(context.Background(), Spec{Rank: r, Size: n, Bytes: bytes, HostID: host, Dir: dir, Timeout: 10 * time.Second}, ex.ForRank(r))
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
