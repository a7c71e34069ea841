package intra

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport/arena"
)

// allToAllReference is what rank r receives when every rank q sends
// sends[q]: block r of each, in rank order.
func allToAllReference(sends [][]byte, r int) []byte {
	p := len(sends)
	m := len(sends[0]) / p
	var out []byte
	for q := range p {
		out = append(out, sends[q][r*m:(r+1)*m]...)
	}
	return out
}

// verifyAllToAll runs one all_to_all of blocks of m bytes through
// allToAllWith and checks every rank's recv.
func verifyAllToAll(t *testing.T, w *world, scs []*SingleCopy, m int, inPlace bool, tu tuning) {
	t.Helper()
	p := len(scs)
	sends := make([][]byte, p)
	for r := range p {
		sends[r] = input(0, 0, p*m, r, uint64(m)*11+uint64(p))
	}
	outs := make([][]byte, p)
	w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		send := bytes.Clone(sends[r])
		recv := make([]byte, p*m)
		if inPlace {
			recv = send
		}
		outs[r] = recv
		return allToAllWith(ctx, a, scs[r], seq, send, recv, tu)
	})
	for r := range p {
		require.True(t, bytes.Equal(allToAllReference(sends, r), outs[r]), "m=%d inPlace=%v rank %d: recv differs", m, inPlace, r)
	}
}

// Every rank reads the blocks meant for it from its peers' sends once the
// ranks agreed, in and out of place, at p = 2, 3, 4.
func TestSingleCopyAllToAll(t *testing.T) {
	requireCMA(t)
	tu := gatherTuning()
	for _, p := range []int{2, 3, 4} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			w := newWorld(t, p, testArenaConfig(""))
			scs := singleCopies(p)
			for _, m := range gatherBlockSizes(p, tu) {
				for _, inPlace := range []bool{false, true} {
					verifyAllToAll(t, w, scs, m, inPlace, tu)
				}
			}
			for r, sc := range scs {
				assert.Equal(t, "on", sc.State(), "rank %d", r)
			}
		})
	}
}

// An unwilling or refusing rank makes every rank fall back to the staged
// exchange with the same results, and the answer sticks.
func TestSingleCopyAllToAllFallback(t *testing.T) {
	tu := gatherTuning()
	for _, c := range []struct {
		name  string
		setup func(scs []*SingleCopy)
	}{
		{"disabled on the last rank", func(scs []*SingleCopy) { scs[len(scs)-1] = NewSingleCopy(false) }},
		{"refused on rank 0", func(scs []*SingleCopy) { scs[0].refuse = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 3, testArenaConfig(""))
			scs := singleCopies(3)
			c.setup(scs)
			for _, m := range gatherBlockSizes(3, tu) {
				verifyAllToAll(t, w, scs, m, m%2 == 0, tu)
			}
			for r, sc := range scs {
				assert.Contains(t, sc.State(), "off", "rank %d", r)
			}
		})
	}
}

// Exchanges outside the window run staged and start no agreement; a rank
// that passes no single-copy state where its peers pass one, or another
// size, fails the call on every rank, and the arena stays usable.
func TestSingleCopyAllToAllWindowAndMismatch(t *testing.T) {
	requireCMA(t)
	tu := gatherTuning()
	const p = 2
	w := newWorld(t, p, testArenaConfig(""))
	scs := singleCopies(p)
	for _, n := range []int{tu.singleCopyAllToAllMin - p, tu.singleCopyAllToAllMax + p} {
		verifyAllToAll(t, w, scs, n/p, false, tu)
	}
	for r, sc := range scs {
		assert.Equal(t, "undecided", sc.State(), "rank %d", r)
	}
	mixed := []*SingleCopy{NewSingleCopy(true), nil}
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		buf := make([]byte, tu.singleCopyAllToAllMin)
		return allToAllWith(ctx, a, mixed[r], seq, buf, make([]byte, len(buf)), tu)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
	}
	errs = w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		n := tu.singleCopyAllToAllMin + r*2*p // both in the window, different sizes
		return allToAllWith(ctx, a, scs[r], seq, make([]byte, n), make([]byte, n), tu)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
	}
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
}

func TestAllToAllWithRefusesUnevenBuffers(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	for _, c := range []struct{ send, recv int }{{6, 4}, {5, 5}} {
		errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			return AllToAllWith(ctx, a, nil, seq, make([]byte, c.send), make([]byte, c.recv))
		})
		for r, err := range errs {
			require.ErrorIs(t, err, errInvalid(), "send %d recv %d rank %d", c.send, c.recv, r)
		}
	}
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
}
