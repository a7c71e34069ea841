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

// gatherTuning is singleCopyTuning with single-copy all_gathers and even
// all_to_alls from 4 KiB to 1 MiB of recv.
func gatherTuning() tuning {
	t := singleCopyTuning()
	t.singleCopyGatherMin, t.singleCopyGatherMax = 4<<10, 1<<20
	t.singleCopyAllToAllMin, t.singleCopyAllToAllMax = 4<<10, 1<<20
	return t
}

// gatherBlockSizes are per-rank block sizes around the single-copy
// minimum at p ranks: empty, below, at and above it, odd ones, and blocks
// larger than a data half (several staged epochs when it falls back).
func gatherBlockSizes(p int, tu tuning) []int {
	lo := tu.singleCopyGatherMin / p
	return []int{0, 1, lo - 1, lo, lo + 7, 3*lo + 1, 40 << 10}
}

// verifyAllGather runs one all_gather of every rank's block of m bytes
// through allGatherWith and checks every rank's recv.
func verifyAllGather(t *testing.T, w *world, scs []*SingleCopy, m int, inPlace bool, tu tuning) {
	t.Helper()
	p := len(scs)
	blocks := make([][]byte, p)
	for r := range p {
		blocks[r] = input(0, 0, m, r, uint64(m)*7+uint64(p))
	}
	want := bytes.Join(blocks, nil)
	outs := make([][]byte, p)
	w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		recv := make([]byte, p*m)
		send := blocks[r]
		if inPlace {
			copy(recv[r*m:], send)
			send = recv[r*m : (r+1)*m]
		}
		outs[r] = recv
		return allGatherWith(ctx, a, scs[r], seq, send, recv, tu)
	})
	for r := range p {
		require.True(t, bytes.Equal(want, outs[r]), "m=%d inPlace=%v rank %d: recv differs", m, inPlace, r)
	}
}

// dataMovers are the single-copy data movers, each with its check of one
// op on every rank against its reference.
var dataMovers = []struct {
	name   string
	verify func(t *testing.T, w *world, scs []*SingleCopy, m int, inPlace bool, tu tuning)
}{{"allgather", verifyAllGather}, {"alltoall", verifyAllToAll}}

// Every rank reads its peers' blocks in place once they agreed and gets
// the reference (all_gather: the concatenation; all_to_all: block me of
// every send), in and out of place, at p = 2, 3, 4.
func TestSingleCopyDataMovers(t *testing.T) {
	requireCMA(t)
	tu := gatherTuning()
	for _, op := range dataMovers {
		for _, p := range []int{2, 3, 4} {
			t.Run(fmt.Sprint(op.name, "/p", p), func(t *testing.T) {
				w := newWorld(t, p, testArenaConfig(""))
				scs := singleCopies(p)
				for _, m := range gatherBlockSizes(p, tu) {
					for _, inPlace := range []bool{false, true} {
						op.verify(t, w, scs, m, inPlace, tu)
					}
				}
				for r, sc := range scs {
					assert.Equal(t, "on", sc.State(), "rank %d", r)
				}
			})
		}
	}
}

// unwillingRanks are the ways the data movers' single-copy agreement
// fails: a rank disabled, or a rank whose kernel refuses the probe.
var unwillingRanks = []struct {
	name  string
	setup func(scs []*SingleCopy)
}{
	{"disabled on the last rank", func(scs []*SingleCopy) { scs[len(scs)-1] = NewSingleCopy(false) }},
	{"refused on rank 0", func(scs []*SingleCopy) { scs[0].refuse = true }},
}

// An unwilling or refusing rank makes every rank fall back to the staged
// protocol with the same results, and the answer sticks, for all_gather
// and all_to_all alike.
func TestSingleCopyDataMoversFallback(t *testing.T) {
	tu := gatherTuning()
	for _, op := range dataMovers {
		for _, c := range unwillingRanks {
			t.Run(op.name+"/"+c.name, func(t *testing.T) {
				w := newWorld(t, 3, testArenaConfig(""))
				scs := singleCopies(3)
				c.setup(scs)
				for _, m := range gatherBlockSizes(3, tu) {
					op.verify(t, w, scs, m, m%2 == 0, tu)
				}
				for r, sc := range scs {
					assert.Contains(t, sc.State(), "off", "rank %d", r)
				}
			})
		}
	}
}

// A rank that passes no single-copy state where its peers pass one fails
// the call on every rank as a mismatch, and the arena stays usable.
func TestSingleCopyAllGatherMismatch(t *testing.T) {
	requireCMA(t)
	tu := gatherTuning()
	w := newWorld(t, 2, testArenaConfig(""))
	scs := []*SingleCopy{NewSingleCopy(true), nil}
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		send := make([]byte, tu.singleCopyGatherMin)
		return allGatherWith(ctx, a, scs[r], seq, send, make([]byte, 2*len(send)), tu)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
	}
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
}

// All_gathers outside the single-copy window (below its minimum, above
// its maximum) run staged: right results, and no rank starts the
// agreement.
func TestSingleCopyAllGatherWindow(t *testing.T) {
	tu := gatherTuning()
	p := 2
	w := newWorld(t, p, testArenaConfig(""))
	scs := singleCopies(p)
	for _, n := range []int{tu.singleCopyGatherMin - p, tu.singleCopyGatherMax + p} {
		verifyAllGather(t, w, scs, n/p, false, tu)
	}
	for r, sc := range scs {
		assert.Equal(t, "undecided", sc.State(), "rank %d", r)
	}
}
