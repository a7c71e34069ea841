// Package symmtest allocates symmetric memory among goroutine ranks, for
// the tests of packages above transport/symm.
package symmtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/transport/symm"
)

// gather is an all-gather among n goroutines (symm.Exchange), one call per
// rank per round.
type gather struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	round int
	got   int
	buf   []byte
	out   []byte
}

func (g *gather) forRank(rank int) symm.Exchange {
	return func(_ context.Context, send, recv []byte) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.buf == nil {
			g.buf = make([]byte, g.n*len(send))
		}
		copy(g.buf[rank*len(send):], send)
		round := g.round
		if g.got++; g.got == g.n {
			g.out, g.buf, g.got = g.buf, nil, 0
			g.round++
			g.cond.Broadcast()
		}
		for g.round == round {
			g.cond.Wait()
		}
		copy(recv, g.out)
		return nil
	}
}

// Windows allocates bytes of symmetric memory on p goroutine ranks of one
// host, in a temporary directory; they are closed at cleanup.
func Windows(t *testing.T, p, bytes int) []*symm.Window {
	t.Helper()
	g := &gather{n: p}
	g.cond = sync.NewCond(&g.mu)
	dir := t.TempDir()
	ws := make([]*symm.Window, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[r], errs[r] = symm.Alloc(context.Background(), symm.Spec{Rank: r, Size: p, Bytes: bytes, HostID: "h", Dir: dir, Timeout: 10 * time.Second}, g.forRank(r))
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
