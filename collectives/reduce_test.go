package collectives_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

var reduceAlgos = []collectives.Algorithm{collectives.Tree, collectives.Chain}

// TestReduceExact: Reduce to a root that moves with the case, over every
// world size x algorithm x dtype x valid op x count; in place on odd counts.
func TestReduceExact(t *testing.T) {
	for _, p := range worlds {
		for ai, algo := range reduceAlgos {
			for _, dt := range testDTypes() {
				for _, op := range validOps(dt) {
					for _, n := range counts(p) {
						if n == bigCount && !bigCaseFor(dt, op, p, ai) {
							continue
						}
						root := (n + int(op)) % p
						inPlace := n%2 == 1
						name := fmt.Sprintf("p%d/%s/%s/%s/n%d/root%d/inplace=%v", p, algoName(algo), dt, op, n, root, inPlace)
						t.Run(name, func(t *testing.T) {
							o := collectives.Options{Algo: algo, PreMul: exactPreMul, ChunkBytes: 4096}
							checkReduce(t, name, p, dt, op, n, root, o, inPlace)
						})
					}
				}
			}
		}
	}
}

func checkReduce(t *testing.T, name string, p int, dt reduce.DType, op reduce.Op, n, root int, o collectives.Options, inPlace bool) {
	t.Helper()
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = exactInput(newRNG(seedOf(name), r), dt, op, n)
	}
	want := reference(dt, op, o.PreMul, inputs)
	sends := make([][]byte, p)
	for r := range p {
		sends[r] = append([]byte(nil), inputs[r]...)
	}
	out := garbage(len(want))
	if inPlace {
		out = sends[root]
	}
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		var recv []byte // nil on every rank but root
		if r == root {
			recv = out
		}
		return collectives.Reduce(ctx, ep, testTag, sends[r], recv, dt, op, root, o)
	}))
	requireSameBytes(t, want, out, "root %d result", root)
	for r := range p {
		if r != root || !inPlace {
			requireSameBytes(t, inputs[r], sends[r], "rank %d send buffer modified", r)
		}
	}
}

// TestReduceScatterExact: every rank gets its block of the reduction; in
// place (recv is the rank's own block of send) on odd counts.
func TestReduceScatterExact(t *testing.T) {
	for _, p := range worlds {
		for _, dt := range testDTypes() {
			for _, op := range validOps(dt) {
				for _, n := range counts(p) {
					per := n // elements per rank
					if n == bigCount {
						if !bigCaseFor(dt, op, p, 0) {
							continue
						}
						per = n / p
					}
					inPlace := n%2 == 1
					name := fmt.Sprintf("p%d/%s/%s/per%d/inplace=%v", p, dt, op, per, inPlace)
					t.Run(name, func(t *testing.T) {
						cnt := make([]int, p)
						for i := range cnt {
							cnt[i] = per
						}
						checkReduceScatter(t, name, dt, op, cnt, false, inPlace)
					})
				}
			}
		}
	}
}

// TestReduceScatterVExact: uneven blocks, zero-length ones included.
func TestReduceScatterVExact(t *testing.T) {
	for _, p := range worlds {
		for _, dt := range testDTypes() {
			for _, op := range validOps(dt) {
				for _, n := range counts(p) {
					if n == bigCount && !bigCaseFor(dt, op, p, 1) {
						continue
					}
					inPlace := n%2 == 0
					name := fmt.Sprintf("p%d/%s/%s/n%d/inplace=%v", p, dt, op, n, inPlace)
					t.Run(name, func(t *testing.T) {
						checkReduceScatter(t, name, dt, op, unevenSplit(n, p), true, inPlace)
					})
				}
			}
		}
	}
}

// unevenSplit splits n into p counts growing with the rank (rank 0 gets
// none when p > 1), the remainder going to the last rank.
func unevenSplit(n, p int) []int {
	c := make([]int, p)
	total := p * (p - 1) / 2
	left := n
	for i := range p - 1 {
		if total > 0 {
			c[i] = n * i / total / 2
		}
		left -= c[i]
	}
	c[p-1] = left
	return c
}

func checkReduceScatter(t *testing.T, name string, dt reduce.DType, op reduce.Op, cnt []int, v, inPlace bool) {
	t.Helper()
	p, es := len(cnt), dt.Size()
	n := 0
	for _, c := range cnt {
		n += c
	}
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = exactInput(newRNG(seedOf(name), r), dt, op, n)
	}
	want := reference(dt, op, exactPreMul, inputs)
	offs := make([]int, p+1)
	for i, c := range cnt {
		offs[i+1] = offs[i] + c*es
	}
	sends, recvs := make([][]byte, p), make([][]byte, p)
	for r := range p {
		sends[r] = append([]byte(nil), inputs[r]...)
		recvs[r] = garbage(cnt[r] * es)
		if inPlace {
			recvs[r] = sends[r][offs[r]:offs[r+1]]
		}
	}
	o := collectives.Options{PreMul: exactPreMul, ChunkBytes: 4096}
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		if v {
			return collectives.ReduceScatterV(ctx, ep, testTag, sends[r], recvs[r], cnt, dt, op, o)
		}
		return collectives.ReduceScatter(ctx, ep, testTag, sends[r], recvs[r], dt, op, o)
	}))
	for r := range p {
		requireSameBytes(t, want[offs[r]:offs[r+1]], recvs[r], "rank %d block", r)
		if !inPlace {
			requireSameBytes(t, inputs[r], sends[r], "rank %d send buffer modified", r)
		}
	}
}

// TestReduceScatterFloatDeterminism: random floats, two runs, same bits,
// within the rounding bound of the float64 result.
func TestReduceScatterFloatDeterminism(t *testing.T) {
	for _, p := range []int{2, 3, 5, 8} {
		for _, dt := range []reduce.DType{reduce.Float16, reduce.BFloat16, reduce.Float32, reduce.Float64} {
			for _, op := range []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum} {
				name := fmt.Sprintf("p%d/%s/%s", p, dt, op)
				t.Run(name, func(t *testing.T) {
					per := 3001
					if raceEnabled {
						per = 501
					}
					inputs := make([][]byte, p)
					for r := range p {
						inputs[r] = randomFloats(newRNG(seedOf(name), r), dt, op, per*p)
					}
					o := collectives.Options{PreMul: 0.3, ChunkBytes: 1024}
					run := func() [][]byte {
						outs := make([][]byte, p)
						requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
							r := ep.Rank()
							outs[r] = make([]byte, per*dt.Size())
							return collectives.ReduceScatter(ctx, ep, testTag, inputs[r], outs[r], dt, op, o)
						}))
						return outs
					}
					first, again := run(), run()
					want, tol := floatReference(dt, op, o.PreMul, inputs)
					for r := range p {
						requireSameBytes(t, first[r], again[r], "rank %d: second run differs", r)
						got := floats(dt, first[r])
						for i := range got {
							j := r*per + i
							require.InDelta(t, want[j], got[i], tol[j], "rank %d element %d", r, i)
						}
					}
				})
			}
		}
	}
}

// TestReduceInvalidPairs: the reductions reject what reduce.Check rejects.
func TestReduceInvalidPairs(t *testing.T) {
	for _, pair := range invalidPairs() {
		dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
		t.Run(fmt.Sprintf("%s/%s", dt, op), func(t *testing.T) {
			errs := make([][3]error, 2)
			requireAllOK(t, runRanks(t, 2, func(ctx context.Context, ep transport.Endpoint) error {
				es, o := dt.Size(), collectives.Options{}
				errs[ep.Rank()] = [3]error{
					collectives.Reduce(ctx, ep, testTag, make([]byte, 4*es), make([]byte, 4*es), dt, op, 0, o),
					collectives.ReduceScatter(ctx, ep, testTag, make([]byte, 4*es), make([]byte, 2*es), dt, op, o),
					collectives.ReduceScatterV(ctx, ep, testTag, make([]byte, 4*es), make([]byte, 2*es), []int{2, 2}, dt, op, o),
				}
				return nil
			}))
			for r, rankErrs := range errs {
				for i, err := range rankErrs {
					require.ErrorIs(t, err, collectives.ErrInvalidArgument, "rank %d call %d", r, i)
				}
			}
		})
	}
}
