// Package gather is an all-gather among goroutines of one process, for
// tests that stand ranks up as goroutines (symmetric allocation's
// exchange, transport/symm).
package gather

import (
	"context"
	"sync"
)

// Gather is an all-gather among n goroutines, one call per rank per round.
type Gather struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	round int
	got   int
	buf   []byte
	out   []byte
}

// New is a Gather among n ranks.
func New(n int) *Gather {
	g := &Gather{n: n}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// ForRank is rank's side: it puts send at rank's place and returns once
// every rank of the round has called, with all their sends in recv.
func (g *Gather) ForRank(rank int) func(ctx context.Context, send, recv []byte) error {
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
