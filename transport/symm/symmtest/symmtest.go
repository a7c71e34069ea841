// Package symmtest allocates symmetric memory among goroutine ranks, for
// the tests of packages above transport/symm.
package symmtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/transport/internal/gather"
	"github.com/hccl-go/hccl-go/transport/symm"
)

// Windows allocates bytes of symmetric memory on p goroutine ranks of one
// host, in a temporary directory; they are closed at cleanup.
func Windows(t *testing.T, p, bytes int) []*symm.Window {
	t.Helper()
	g := gather.New(p)
	dir := t.TempDir()
	ws := make([]*symm.Window, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[r], errs[r] = symm.Alloc(context.Background(), symm.Spec{Rank: r, Size: p, Bytes: bytes, HostID: "h", Dir: dir, Timeout: 10 * time.Second}, g.ForRank(r))
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("symmetric allocation on rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, w := range ws {
			_ = w.Close()
		}
	})
	return ws
}
