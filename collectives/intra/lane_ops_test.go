package intra

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// A data mover of the lane, as export/lane.c numbers them.
type laneMoveKind int

const (
	moveBroadcast laneMoveKind = iota
	moveAllGather
	moveBarrier
)

// laneMoveTo runs a data mover as export/lane.c does, chunk by chunk
// (one epoch through the inline slots for a payload that fits one), and
// hands it over to the Finish functions of lane_ops.go at the chunk of
// offset stop (a multiple of LaneMoveChunk, at most the last chunk's),
// before its wait: each chunk publishes this rank's part (a broadcast
// root's send, every rank's all_gather block), posts it (stamped in the
// first epoch) and copies the rank's own data into recv; after the wait it
// copies the peers' chunks.
func laneMoveTo(ctx context.Context, a *arena.Arena, move laneMoveKind, seq uint64, send, recv []byte, root, stop int) error {
	me, p := a.Index(), a.Size()
	m := len(send)
	var stamp arena.Stamp
	switch move {
	case moveBroadcast:
		m = len(recv)
		stamp = BroadcastStamp(seq, m, root)
	case moveAllGather:
		stamp = AllGatherStamp(seq, m)
	default:
		m = 0
		stamp = BarrierStamp(seq)
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	chunk := max(m, 1)
	if m > a.InlineBytes() {
		chunk = LaneMoveChunk(a)
	}
	publishes := move == moveAllGather || me == root
	own := recv
	if move == moveAllGather {
		own = recv[me*m : (me+1)*m]
	}
	var e uint64
	for off := 0; ; off += chunk {
		c := max(min(chunk, m-off), 0)
		e = a.Next()
		if publishes && c > 0 {
			copy(moveBuffer(a, me, e, m)[:c], send[off:off+c])
		}
		post(a, e, stamp, off == 0)
		if publishes && c > 0 {
			args.CopyUnlessSame(own[off:off+c], send[off:off+c])
		}
		if off == stop {
			break
		}
		if err := await(ctx, a, e, stamp, off == 0); err != nil {
			a.End(err)
			return err
		}
		for j := range p {
			if j != me && c > 0 && (move == moveAllGather || j == root) {
				dst := recv[off : off+c]
				if move == moveAllGather {
					dst = recv[j*m+off : j*m+off+c]
				}
				copy(dst, moveBuffer(a, j, e, m)[:c])
			}
		}
	}
	a.End(nil)
	switch move {
	case moveBroadcast:
		return FinishLaneBroadcast(ctx, a, seq, e, stop, send, recv, root)
	case moveAllGather:
		return FinishLaneAllGather(ctx, a, seq, e, stop, send, recv)
	default:
		return FinishLaneBarrier(ctx, a, seq, e)
	}
}

// moveBuffer is local rank j's buffer of epoch e for a data mover of m
// bytes (a rank's): its inline slot, or its data half.
func moveBuffer(a *arena.Arena, j int, e uint64, m int) []byte {
	if m <= a.InlineBytes() {
		return a.Inline(j, e)
	}
	return a.Half(j, e)
}

// laneMove runs a data mover through the lane, handed over at its first
// chunk.
func laneMove(ctx context.Context, a *arena.Arena, move laneMoveKind, seq uint64, send, recv []byte, root int) error {
	return laneMoveTo(ctx, a, move, seq, send, recv, root, 0)
}

// startLaneMove is laneMoveTo up to its first wait, for tests that finish
// it themselves: it returns the epoch posted.
func startLaneMove(a *arena.Arena, move laneMoveKind, seq uint64, send, recv []byte, root int) (uint64, error) {
	me := a.Index()
	if err := a.Begin(seq); err != nil {
		return 0, err
	}
	defer a.End(nil)
	e := a.Next()
	var stamp arena.Stamp
	switch move {
	case moveBroadcast:
		stamp = BroadcastStamp(seq, len(recv), root)
		if me == root {
			copy(laneBuffer(a, me, e, len(recv)), send)
		}
	case moveAllGather:
		stamp = AllGatherStamp(seq, len(send))
		copy(laneBuffer(a, me, e, len(send)), send)
	default:
		stamp = BarrierStamp(seq)
	}
	postFirst(a, e, stamp)
	return e, nil
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// The halves meet Broadcast, AllGatherWith and Barrier on the ranks that do
// not take the lane, epoch for epoch: every rank ends with the reference's
// bytes, for sizes from empty through the inline slot to the lane's limit,
// in and out of place, whichever ranks take the lane.
func TestLaneMovesMatchTheirCollectives(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			w := newWorld(t, p, testArenaConfig(""))
			inline, chunk := w.arenas[0].InlineBytes(), LaneMoveChunk(w.arenas[0])
			require.Greater(t, chunk, inline)
			all := uint(1)<<p - 1
			for _, n := range []int{0, 1, 7, inline, inline + 1, chunk, 2*chunk + 3} {
				// Handed over at the first chunk, or at the last.
				for _, stop := range []int{0, max(0, (n-1)/chunk*chunk)} {
					for lanes := uint(1); lanes <= all; lanes++ { // which ranks take the lane
						inLane := func(r int) bool { return lanes&(1<<r) != 0 }
						what := fmt.Sprintf("n=%d stop=%d lanes=%b", n, stop, lanes)
						if n <= inline && stop > 0 {
							continue
						}
						for _, root := range []int{0, p - 1} {
							payload := randomBytes(n, uint64(n*31+root))
							outs := make([][]byte, p)
							w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
								outs[r] = make([]byte, n)
								send := outs[r]
								if r == root {
									if n%2 == 0 { // in place
										copy(outs[r], payload)
									} else {
										send = payload
									}
								}
								if inLane(r) {
									return laneMoveTo(ctx, a, moveBroadcast, seq, send, outs[r], root, stop)
								}
								return Broadcast(ctx, a, seq, send, outs[r], root)
							})
							for r := range p {
								requireSameBytes(t, payload, outs[r], "broadcast root %d %s rank %d", root, what, r)
							}
						}
						blocks := make([][]byte, p)
						want := []byte{}
						for r := range p {
							blocks[r] = randomBytes(n, uint64(n*17+r))
							want = append(want, blocks[r]...)
						}
						outs := make([][]byte, p)
						w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
							outs[r] = make([]byte, p*n)
							send := blocks[r]
							if n%2 == 1 { // in place: the own block of recv
								send = outs[r][r*n : (r+1)*n]
								copy(send, blocks[r])
							}
							if inLane(r) {
								return laneMoveTo(ctx, a, moveAllGather, seq, send, outs[r], -1, stop)
							}
							return AllGatherWith(ctx, a, nil, seq, send, outs[r])
						})
						for r := range p {
							requireSameBytes(t, want, outs[r], "all_gather %s rank %d", what, r)
						}
						w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
							if inLane(r) {
								return laneMove(ctx, a, moveBarrier, seq, nil, nil, -1)
							}
							return Barrier(ctx, a, seq)
						})
					}
				}
			}
		})
	}
}

// A rank in the lane that runs another op than its peers (or the same op
// with other sizes or root) fails with ErrMismatch, as its peers do, and
// the arena stays usable.
func TestLaneMoveMismatchFailsEveryRankAndKeepsArena(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, a *arena.Arena, r int, seq uint64) error
		want string
	}{
		{"broadcast against all_gather", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			buf := make([]byte, 16)
			if r == 0 {
				return laneMove(ctx, a, moveBroadcast, seq, buf[:8], buf[:8], 0)
			}
			return laneMove(ctx, a, moveAllGather, seq, buf[8:], buf, -1)
		}, "rank 1 called allgather, this rank broadcast"},
		{"roots differ", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			buf := make([]byte, 8)
			return laneMove(ctx, a, moveBroadcast, seq, buf, buf, r)
		}, "root"},
		{"all_gather blocks differ", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			m := 8 * (r + 1)
			out := make([]byte, 2*m)
			return laneMove(ctx, a, moveAllGather, seq, out[r*m:(r+1)*m], out, -1)
		}, "bytes per rank"},
		{"barrier against Go's broadcast", func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			if r == 0 {
				return laneMove(ctx, a, moveBarrier, seq, nil, nil, -1)
			}
			return Broadcast(ctx, a, seq, nil, nil, 0)
		}, "broadcast"},
	} {
		errs := w.run(t, tc.run)
		for r, err := range errs {
			require.ErrorIs(t, err, ErrMismatch, "%s: rank %d", tc.name, r)
		}
		require.Contains(t, errs[0].Error()+errs[1].Error(), tc.want, tc.name)
		w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
	}
}

// A peer that never comes: the Go half waits within the op's deadline,
// names the peer, and breaks the arena (as Broadcast would).
func TestLaneMoveFinishTimesOutAndNamesThePeer(t *testing.T) {
	for _, move := range []laneMoveKind{moveBroadcast, moveAllGather, moveBarrier} {
		w := newWorld(t, 2, testArenaConfig(""))
		buf := make([]byte, 16)
		e, err := startLaneMove(w.arenas[0], move, 1, buf[:8], buf, 0)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		switch move {
		case moveBroadcast:
			err = FinishLaneBroadcast(ctx, w.arenas[0], 1, e, 0, buf, buf, 0)
		case moveAllGather:
			err = FinishLaneAllGather(ctx, w.arenas[0], 1, e, 0, buf[:8], buf)
		default:
			err = FinishLaneBarrier(ctx, w.arenas[0], 1, e)
		}
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "move %d", move)
		require.Contains(t, err.Error(), "peer rank 1", "move %d", move)
		require.ErrorIs(t, Barrier(context.Background(), w.arenas[0], 2), arena.ErrBroken, "move %d", move)
	}
}

// LaneMoveChunk is Broadcast's chunk: a broadcast of one chunk takes one
// epoch, one byte more two.
func TestLaneMoveChunk(t *testing.T) {
	for _, cfg := range []arena.Config{{}, testArenaConfig("")} {
		w := newWorld(t, 2, cfg)
		a := w.arenas[0]
		chunk := LaneMoveChunk(a)
		require.Equal(t, alignDown(min(defaultTuning().copyBytes, a.HalfBytes()), lineBytes), chunk)
		for _, n := range []int{chunk, chunk + 1} {
			before := *a.Raw().Epoch
			w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error {
				buf := make([]byte, n)
				return Broadcast(ctx, a, seq, buf, buf, 0)
			})
			epochs := 1
			if n > chunk {
				epochs = 2
			}
			require.Equal(t, uint64(epochs), *a.Raw().Epoch-before, "broadcast of %d bytes (chunk %d)", n, chunk)
		}
	}
	require.Equal(t, -1, LaneMoveChunk(nil))
}

// startLaneReduce is the first half of a one-epoch reduce as
// export/lane.c runs it: publish (scaled for PreMulSum) and post the
// stamped epoch.
func startLaneReduce(a *arena.Arena, seq uint64, send []byte, dt reduce.DType, op reduce.Op, preMul float64, root int) (uint64, error) {
	if n := len(send); n > LaneLimit(a) {
		return 0, args.Invalidf("%d bytes do not take one epoch", n)
	}
	if err := a.Begin(seq); err != nil {
		return 0, err
	}
	defer a.End(nil)
	e := a.Next()
	publish(dt, op, preMul, laneBuffer(a, a.Index(), e, len(send)), send)
	postFirst(a, e, ReduceStamp(seq, len(send), dt, op, root))
	return e, nil
}

// laneReduceScatter runs a reduce_scatter as export/lane.c does, chunk by
// chunk through the data halves, and hands it over to
// FinishLaneReduceScatter at the chunk of offset stop (a multiple of the
// slot, at most the last chunk's), after its wait (waited) or before.
func laneReduceScatter(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stop int, waited bool) error {
	me, p, m := a.Index(), a.Size(), len(recv)
	if err := a.Begin(seq); err != nil {
		return err
	}
	slot, shared := LaneScatterSlot(a), scatterOwnShared(send[me*m:(me+1)*m], recv, me, op)
	stamp := ReduceScatterStamp(seq, m, dt, op)
	var e uint64
	for off := 0; ; off += slot {
		c := min(slot, m-off)
		e = a.Next()
		for j := range p {
			if c > 0 && (j != me || shared) {
				publish(dt, op, preMul, a.Half(me, e)[j*slot:j*slot+c], send[j*m+off:j*m+off+c])
			}
		}
		post(a, e, stamp, off == 0)
		if off == stop && !waited {
			break
		}
		if err := await(ctx, a, e, stamp, off == 0); err != nil {
			a.End(err)
			return err
		}
		if off == stop {
			break
		}
		reduceInto(dt, op, recv[off:off+c], p, func(j int) []byte {
			if j == me && !shared {
				return send[me*m+off : me*m+off+c]
			}
			return a.Half(j, e)[me*slot : me*slot+c]
		})
		finishAvg(dt, op, recv[off:off+c], p)
	}
	a.End(nil)
	return FinishLaneReduceScatter(ctx, a, seq, e, stop, waited, send, recv, dt, op, preMul)
}

// The reduce and reduce_scatter halves meet Reduce and ReduceScatter on the
// ranks that do not take the lane and give the reference's result, bit
// for bit, for every dtype and op, sizes up to the lane's limits, in and
// out of place, whichever ranks take the lane.
func TestLaneReductionsMatchTheirCollectives(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			w := newWorld(t, p, testArenaConfig(""))
			a0 := w.arenas[0]
			all := uint(1)<<p - 1
			for _, pair := range validPairs() {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				es := dt.Size()
				for _, n := range []int{0, 1, 7, a0.InlineBytes() / es, a0.InlineBytes()/es + 1, LaneLimit(a0) / es} {
					seed := uint64(n)*131 + uint64(dt)*17 + uint64(op)
					inputs := make([][]byte, p)
					for r := range p {
						inputs[r] = input(dt, op, n, r, seed)
					}
					want := refReduce(dt, op, testPreMul, inputs)
					for _, lanes := range []uint{1, all} {
						root := int(seed) % p
						var got []byte
						w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
							send := append([]byte(nil), inputs[r]...)
							var recv []byte
							if r == root {
								recv = send // in place on odd sizes
								if n%2 == 0 {
									recv = make([]byte, len(send))
								}
								got = recv
							}
							if lanes&(1<<r) == 0 {
								return Reduce(ctx, a, seq, send, recv, dt, op, testPreMul, root)
							}
							e, err := startLaneReduce(a, seq, send, dt, op, testPreMul, root)
							if err != nil {
								return err
							}
							return FinishLaneReduce(ctx, a, seq, e, len(send), recv, dt, op, root)
						})
						requireSameBytes(t, want, got, "reduce %s %s n=%d root %d lanes=%b", dt, op, n, root, lanes)
					}
				}
				slot := LaneScatterSlot(a0)
				for _, m := range []int{0, 1, 7, slot / es, 2*slot/es + 3} {
					seed := uint64(m)*37 + uint64(dt)*5 + uint64(op)
					inputs := make([][]byte, p)
					for r := range p {
						inputs[r] = input(dt, op, p*m, r, seed)
					}
					want := refReduce(dt, op, testPreMul, inputs)
					mb := m * es
					last := max(0, (mb-1)/slot*slot) // the last chunk's offset
					for _, hand := range []struct {
						lanes  uint
						stop   int
						waited bool
					}{{1, 0, false}, {all - 1, 0, true}, {all, last, false}, {all, last, true}, {1, min(slot, last), true}} {
						outs := make([][]byte, p)
						w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
							send := append([]byte(nil), inputs[r]...)
							recv := send[r*mb : (r+1)*mb] // in place on odd sizes
							if m%2 == 0 {
								recv = make([]byte, mb)
							}
							outs[r] = recv
							if hand.lanes&(1<<r) == 0 {
								return ReduceScatter(ctx, a, seq, send, recv, dt, op, testPreMul)
							}
							return laneReduceScatter(ctx, a, seq, send, recv, dt, op, testPreMul, hand.stop, hand.waited)
						})
						for r := range p {
							requireSameBytes(t, want[r*mb:(r+1)*mb], outs[r], "reduce_scatter %s %s m=%d %+v rank %d", dt, op, m, hand, r)
						}
					}
				}
			}
		})
	}
}

// A reduce_scatter of blocks of one slot takes one epoch of
// ReduceScatter, one element more two.
func TestLaneScatterSlot(t *testing.T) {
	w := newWorld(t, 2, arena.Config{})
	a := w.arenas[0]
	slot := LaneScatterSlot(a)
	for _, m := range []int{slot, slot + 4} {
		before := *a.Raw().Epoch
		w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error {
			return ReduceScatter(ctx, a, seq, make([]byte, 2*m), make([]byte, m), reduce.Float32, reduce.Sum, 0)
		})
		epochs := uint64(1)
		if m > slot {
			epochs = 2
		}
		require.Equal(t, epochs, *a.Raw().Epoch-before, "reduce_scatter of %d bytes per rank (slot %d)", m, slot)
	}
	require.Equal(t, -1, LaneScatterSlot(nil))
}
