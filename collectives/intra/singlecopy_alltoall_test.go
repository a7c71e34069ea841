package intra

import (
	"bytes"
	"context"
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
