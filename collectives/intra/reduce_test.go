package intra

import (
	"context"
	"fmt"
	"testing"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

func TestReduceScatterMatrix(t *testing.T) {
	for _, p := range worlds {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			for _, pair := range matrixPairs(p) {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				// Blocks, so the largest send (p blocks) just exceeds the data area.
				for _, m := range counts(p, p*dt.Size(), cfg) {
					for _, inPlace := range []bool{false, true} {
						verifyReduceScatter(t, w, dt, op, m, inPlace)
					}
				}
			}
		})
	}
}

// verifyReduceScatter reduce-scatters blocks of m elements and compares
// each rank's block with the reference.
func verifyReduceScatter(t *testing.T, w *world, dt reduce.DType, op reduce.Op, m int, inPlace bool) {
	t.Helper()
	p, es := len(w.arenas), dt.Size()
	seed := uint64(m)*977 + uint64(dt)*17 + uint64(op)
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = input(dt, op, p*m, r, seed)
	}
	want := refReduce(dt, op, testPreMul, inputs)
	outs := make([][]byte, p)
	w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		send := append([]byte(nil), inputs[r]...)
		recv := send[r*m*es : (r+1)*m*es]
		if !inPlace {
			recv = make([]byte, m*es)
		}
		outs[r] = recv
		if err := checkReduceScatter(a, send, recv, dt, op); err != nil {
			return err
		}
		return reduceScatter(ctx, a, seq, send, recv, dt, op, testPreMul, testTuning())
	})
	for r := range p {
		requireSameBytes(t, want[r*m*es:(r+1)*m*es], outs[r], "p=%d %s %s m=%d inPlace=%v rank %d", p, dt, op, m, inPlace, r)
	}
}

func TestReduceToRoot(t *testing.T) {
	for _, p := range worlds {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			for _, pair := range matrixPairs(p) {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				for _, n := range counts(p, dt.Size(), cfg) {
					root := (n + int(op)) % p
					verifyReduce(t, w, dt, op, n, root, n%2 == 0)
				}
			}
		})
	}
}

// verifyReduce reduces n elements to root and compares with the reference;
// the other ranks pass no recv buffer.
func verifyReduce(t *testing.T, w *world, dt reduce.DType, op reduce.Op, n, root int, inPlace bool) {
	t.Helper()
	p := len(w.arenas)
	seed := uint64(n)*313 + uint64(dt)*17 + uint64(op)
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = input(dt, op, n, r, seed)
	}
	want := refReduce(dt, op, testPreMul, inputs)
	var got []byte
	w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		send := append([]byte(nil), inputs[r]...)
		var recv []byte
		if r == root {
			recv = send
			if !inPlace {
				recv = make([]byte, len(send))
			}
			got = recv
		}
		if err := checkReduce(a, send, recv, dt, op, root); err != nil {
			return err
		}
		return reduceRoot(ctx, a, seq, send, recv, dt, op, testPreMul, root, testTuning())
	})
	requireSameBytes(t, want, got, "p=%d %s %s n=%d root %d inPlace=%v", p, dt, op, n, root, inPlace)
}
