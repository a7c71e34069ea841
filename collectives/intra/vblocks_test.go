package intra

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// vCounts are per-rank block sizes (in units) of the v-collectives' tests:
// all empty, one unit for one rank only, blocks differing by one (as a
// split of a non-divisible count gives), blocks of very different sizes
// with an empty one, blocks past the data area, and an empty first or last
// block beside blocks of many chunks.
func vCounts(p, unitBytes int, cfg arena.Config) [][]int {
	big := cfg.DataBytes/unitBytes + 3
	shapes := make([][]int, 7)
	for i := range shapes {
		shapes[i] = make([]int, p)
	}
	shapes[1][p-1] = 1
	for j := range p {
		shapes[2][j] = 7 + min(j, 1)
		shapes[3][j] = (j * 997) % 3001
		shapes[4][j] = big - j
		shapes[5][j] = j * big / 2 // rank 0's block is empty while the others span many chunks
		shapes[6][j] = (p - 1 - j) * big / 2
	}
	return shapes
}

func TestReduceScatterV(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			for _, pr := range []struct {
				dt reduce.DType
				op reduce.Op
			}{{reduce.Float32, reduce.Sum}, {reduce.BFloat16, reduce.Avg}, {reduce.Float64, reduce.PreMulSum}, {reduce.Int8, reduce.Max}, {reduce.Bool, reduce.Bor}} {
				for _, counts := range vCounts(p, pr.dt.Size(), cfg) {
					for _, inPlace := range []bool{false, true} {
						verifyReduceScatterV(t, w, pr.dt, pr.op, counts, inPlace)
					}
				}
			}
		})
	}
}

// verifyReduceScatterV reduce-scatters blocks of counts[j] elements and
// compares each rank's block with the reference.
func verifyReduceScatterV(t *testing.T, w *world, dt reduce.DType, op reduce.Op, counts []int, inPlace bool) {
	t.Helper()
	p, es := len(w.arenas), dt.Size()
	b, err := countBlocks(counts, p, es)
	require.NoError(t, err)
	seed := uint64(b.total())*31 + uint64(dt)*17 + uint64(op)
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = input(dt, op, b.total()/es, r, seed)
	}
	want := refReduce(dt, op, testPreMul, inputs)
	outs := make([][]byte, p)
	w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		send := append([]byte(nil), inputs[r]...)
		recv := b.of(send, r)
		if !inPlace {
			recv = make([]byte, b.size[r])
		}
		outs[r] = recv
		if _, err := checkReduceScatterV(a, send, recv, counts, dt, op); err != nil {
			return err
		}
		stamp := opStamp{kind: kindReduceScatterV, seq: seq, bytes: len(send), dt: dt, op: op, root: noRoot}
		return scatterBlocks(ctx, a, seq, stamp, send, recv, b, dt, op, testPreMul, testTuning())
	})
	for r := range p {
		requireSameBytes(t, b.of(want, r), outs[r], "p=%d %s %s counts=%v inPlace=%v rank %d", p, dt, op, counts, inPlace, r)
	}
}

func TestAllGatherV(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			shapes := append(vCounts(p, 1, cfg), []int{cfg.InlineBytes, 0, cfg.InlineBytes + 1, 3}[:p])
			for _, counts := range shapes {
				b, err := countBlocks(counts, p, 1)
				require.NoError(t, err)
				want := make([]byte, 0, b.total())
				for r := range p {
					want = append(want, pattern(counts[r], r, len(counts))...)
				}
				for _, inPlace := range []bool{false, true} {
					outs := make([][]byte, p)
					w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
						recv := make([]byte, b.total())
						send := pattern(counts[r], r, len(counts))
						if inPlace {
							copy(b.of(recv, r), send)
							send = b.of(recv, r)
						}
						outs[r] = recv
						if _, err := checkAllGatherV(a, send, recv, counts); err != nil {
							return err
						}
						stamp := opStamp{kind: kindAllGatherV, seq: seq, bytes: len(recv), root: noRoot}
						return gatherBlocks(ctx, a, seq, stamp, send, recv, b, testTuning())
					})
					for r := range p {
						requireSameBytes(t, want, outs[r], "p=%d counts=%v inPlace=%v rank %d", p, counts, inPlace, r)
					}
				}
			}
		})
	}
}

// The public entry points refuse counts that do not fit the buffers, and
// a refused call leaves the arena usable.
func TestVCollectivesRefuseBadCounts(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	tests := []struct {
		name string
		fn   rankFunc
	}{
		{"reducescatterv: counts per rank", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			return ReduceScatterV(ctx, a, seq, make([]byte, 8), make([]byte, 4), []int{2}, reduce.Float32, reduce.Sum, 0)
		}},
		{"reducescatterv: negative count", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			return ReduceScatterV(ctx, a, seq, make([]byte, 8), make([]byte, 4), []int{3, -1}, reduce.Float32, reduce.Sum, 0)
		}},
		{"reducescatterv: recv", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			return ReduceScatterV(ctx, a, seq, make([]byte, 12), make([]byte, 12), []int{1, 2}, reduce.Float32, reduce.Sum, 0)
		}},
		{"allgatherv: send", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			return AllGatherV(ctx, a, seq, make([]byte, 4), make([]byte, 5), []int{2, 3})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for r, err := range w.run(t, tc.fn) {
				require.ErrorIs(t, err, errInvalid(), "rank %d", r)
			}
		})
	}
	w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		return AllGatherV(ctx, a, seq, []byte{byte(r)}, make([]byte, 2), []int{1, 1})
	})
}
