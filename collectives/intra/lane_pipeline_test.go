package intra

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// lanePipeline runs an all_reduce pipeline as export/lane.c does up to a
// handover in round stop (rounds 0 to stop-1 whole; of round stop the
// publish and post, and the wait when waited), then hands it to
// FinishLanePipeline. It models lane.c, step for step, on the arena's Go
// API.
func lanePipeline(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, stop int, waited bool) error {
	return laneReducePipeline(ctx, a, seq, send, recv, dt, op, preMul, allRanks, stop, waited)
}

// laneReducePipeline is lanePipeline for a reduce to root (allRanks: an
// all_reduce): off root, each round reduces into the result slot only and
// nothing is copied out.
func laneReducePipeline(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte, dt reduce.DType, op reduce.Op, preMul float64, root, stop int, waited bool) error {
	if err := a.Begin(seq); err != nil {
		return err
	}
	r := laneReduction(a, seq, len(send), dt, op, preMul)
	if root != allRanks {
		r.stamp = ReduceStamp(seq, len(send), dt, op, root)
	}
	me, p, es := a.Index(), a.Size(), dt.Size()
	_, slot := LanePipeline(a)
	w := windows{elems: len(send) / es, es: es, p: p, per: slot / es}
	ownShared := op == reduce.PreMulSum
	var e uint64
	for k := 0; ; k++ {
		e = a.Next()
		if k < w.rounds() {
			for j := range p {
				if j != me || ownShared {
					off, m := w.slice(k, j)
					publish(dt, op, preMul, a.Half(me, e)[j*slot:j*slot+m], send[off:off+m])
				}
			}
		}
		post(a, e, r.stamp, k == 0)
		if k == stop && !waited {
			break
		}
		if err := await(ctx, a, e, r.stamp, k == 0); err != nil {
			a.End(err)
			return err
		}
		if k == stop {
			break
		}
		if k < w.rounds() {
			off, m := w.slice(k, me)
			in := func(j int) []byte {
				if j == me && !ownShared {
					return send[off : off+m]
				}
				return a.Half(j, e)[me*slot : me*slot+m]
			}
			dup := a.Half(me, e+1)[p*slot : p*slot+m]
			if wants(me, root) {
				reduceIntoDup(dt, op, recv[off:off+m], dup, p, in)
			} else {
				reduceInto(dt, op, dup, p, in)
				finishAvg(dt, op, dup, p)
			}
		}
		if k > 0 && wants(me, root) {
			for j := range p {
				if j != me {
					off, m := w.slice(k-1, j)
					copy(recv[off:off+m], a.Half(j, e)[p*slot:p*slot+m])
				}
			}
		}
	}
	a.End(nil)
	return FinishLanePipeline(ctx, a, seq, e, stop, waited, send, recv, dt, op, preMul, root)
}

// A pipeline handed over in any round, before or after its wait, meets
// AllReduce on the other ranks and gives the reference's result bit for
// bit, for every dtype and op, in and out of place.
func TestLanePipelineHandoverMatchesAllReduce(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			w := newWorld(t, p, testArenaConfig(""))
			minBytes, slot := LanePipeline(w.arenas[0])
			require.Greater(t, minBytes, LaneLimit(w.arenas[0]))
			require.Positive(t, slot)
			pairs := validPairs()
			if raceEnabled {
				pairs = pairs[:len(pairs)/3]
			}
			for i, pair := range pairs {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				n := (minBytes+dt.Size()-1)/dt.Size() + i%5 // odd sizes: a partial last window
				rounds := (windows{elems: n, es: dt.Size(), p: p, per: slot / dt.Size()}).rounds()
				for _, stop := range []int{0, 1, rounds - 1, rounds} {
					for _, waited := range []bool{false, true} {
						seed := uint64(n)*131 + uint64(dt)*17 + uint64(op) + uint64(stop)
						run := func(ctx context.Context, a *arena.Arena, r int, seq uint64, send, recv []byte) error {
							if r == 0 {
								return lanePipeline(ctx, a, seq, send, recv, dt, op, testPreMul, stop, waited)
							}
							return AllReduce(ctx, a, seq, send, recv, dt, op, testPreMul)
						}
						requireReferenceReduction(t, w, dt, op, n, seed, stop%2 == 0, run, fmt.Sprintf("stop=%d waited=%v", stop, waited))
					}
				}
			}
		})
	}
}

// A reduce pipeline handed over in any round, before or after its wait,
// meets Reduce on the other ranks: root's recv is the reference's result
// bit for bit, whether root or another rank takes the lane.
func TestLaneReducePipelineHandoverMatchesReduce(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			w := newWorld(t, p, testArenaConfig(""))
			minBytes, slot := LanePipeline(w.arenas[0])
			pairs := validPairs()
			if raceEnabled {
				pairs = pairs[:len(pairs)/3]
			}
			for i, pair := range pairs {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				n := (minBytes+dt.Size()-1)/dt.Size() + i%5
				rounds := (windows{elems: n, es: dt.Size(), p: p, per: slot / dt.Size()}).rounds()
				inputs := make([][]byte, p)
				for r := range p {
					inputs[r] = input(dt, op, n, r, uint64(i))
				}
				want := refReduce(dt, op, testPreMul, inputs)
				for _, stop := range []int{0, rounds - 1, rounds} {
					for _, root := range []int{0, p - 1} {
						waited := stop%2 == 1
						var got []byte
						w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
							send := append([]byte(nil), inputs[r]...)
							var recv []byte
							if r == root {
								recv = make([]byte, len(send))
								got = recv
							}
							if r == 0 {
								return laneReducePipeline(ctx, a, seq, send, recv, dt, op, testPreMul, root, stop, waited)
							}
							return Reduce(ctx, a, seq, send, recv, dt, op, testPreMul, root)
						})
						requireSameBytes(t, want, got, "%s %s n=%d stop=%d root=%d", dt, op, n, stop, root)
					}
				}
			}
		})
	}
}
