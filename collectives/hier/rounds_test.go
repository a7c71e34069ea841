package hier_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

func TestRoundCuts(t *testing.T) {
	assert.Equal(t, []int{0, 0}, hier.RoundCuts(0, 4, 1024), "an empty buffer is one round")
	assert.Equal(t, []int{0, 300}, hier.RoundCuts(300, 4, 1024), "under two rounds: one")
	assert.Equal(t, []int{0, 256, 512}, hier.RoundCuts(512, 4, 1024))
	assert.Equal(t, []int{0, 301, 601}, hier.RoundCuts(601, 4, 1024), "whole elements, the first rounds one longer")
	assert.Equal(t, []int{0, 1024, 2048}, hier.RoundCuts(2048, 1, 1024))
	assert.Equal(t, []int{0, 1 << 20}, hier.RoundCuts(1<<20, 4, 0), "no RoundBytes: one round")
}

// Cut into many rounds, whose arena phases overlap other rounds'
// inter-host phases, the all_reduce still equals the rank-order reference
// bit for bit on every layout, for every reduction of a few dtypes, in
// place and not.
func TestAllReduceInRounds(t *testing.T) {
	dtypes, sizes := []reduce.DType{reduce.Float32, reduce.BFloat16, reduce.Int64}, []int{1, 7, 1001, 3001}
	if raceEnabled {
		dtypes, sizes = dtypes[:1], []int{7, 3001}
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, dt := range dtypes {
				for _, op := range []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum, reduce.Max} {
					if reduce.Check(dt, op) != nil {
						continue
					}
					for _, n := range sizes {
						for _, inPlace := range []bool{false, true} {
							inputs := make([][]byte, p)
							for r := range p {
								inputs[r] = input(dt, op, n, r, uint64(n)+uint64(op))
							}
							want := reference(dt, op, inputs)
							outs := make([][]byte, p)
							c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
								send := slices.Clone(inputs[r])
								outs[r] = send
								if !inPlace {
									outs[r] = make([]byte, len(send))
								}
								return comm.AllReduce(ctx, tag, send, outs[r], dt, op, testPreMul, collectives.Options{ChunkBytes: 512, RoundBytes: 1024})
							})
							for r := range p {
								requireSameBytes(t, want, outs[r], "%s %s n=%d inPlace=%v rank %d", dt, op, n, inPlace, r)
							}
						}
					}
				}
			}
		})
	}
}

// Random floats, whose sums depend on the order: every rank ends with the
// same bits in rounds too, and again on a second run.
func TestAllReduceInRoundsBitwiseIdentical(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p, n := len(l.hostOf), 20011
			var first []byte
			for run := range 2 {
				outs := make([][]byte, p)
				c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
					outs[r] = make([]byte, 4*n)
					return comm.AllReduce(ctx, tag, randomFloats(reduce.Float32, n, r, 11), outs[r], reduce.Float32, reduce.Sum, 0, collectives.Options{RoundBytes: 1024})
				})
				for r := range p {
					requireSameBytes(t, outs[0], outs[r], "run %d: rank %d against rank 0", run, r)
				}
				if run == 0 {
					first = outs[0]
				} else {
					requireSameBytes(t, first, outs[0], "second run against the first")
				}
			}
		})
	}
}

// LastTimes reports the arena and inter-host phases of the last
// all_reduce: both on a shared host across hosts, no arena for a rank
// alone on its host.
func TestLastTimes(t *testing.T) {
	c := newCluster(t, []int{0, 0, 0, 1})
	times := make([]hier.Times, 4)
	c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
		buf := make([]byte, 4*10_000)
		err := comm.AllReduce(ctx, tag, buf, buf, reduce.Float32, reduce.Sum, 0, collectives.Options{RoundBytes: 4096})
		times[r] = comm.LastTimes()
		return err
	})
	for r := range 3 {
		assert.Positive(t, times[r].Arena, "rank %d", r)
		assert.Positive(t, times[r].Inter, "rank %d", r)
	}
	assert.Zero(t, times[3].Arena, "rank 3 is alone on its host")
	assert.Positive(t, times[3].Inter)
}

// all_gather in rounds: every block cut into slices, each round's arena
// phase overlapping the next round's exchange; every rank ends with every
// block in place, on every layout, in place and not.
func TestAllGatherInRounds(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, b := range []int{0, 1, 7, 5003, 20011} {
				for _, inPlace := range []bool{false, true} {
					want := make([]byte, 0, p*b)
					for r := range p {
						want = append(want, pattern(b, r)...)
					}
					outs := make([][]byte, p)
					c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
						recv := make([]byte, p*b)
						send := pattern(b, r)
						if inPlace {
							copy(recv[r*b:], send)
							send = recv[r*b : (r+1)*b]
						}
						outs[r] = recv
						return comm.AllGather(ctx, tag, send, recv, collectives.Options{RoundBytes: 4096})
					})
					for r := range p {
						requireSameBytes(t, want, outs[r], "b=%d inPlace=%v rank %d", b, inPlace, r)
					}
				}
			}
		})
	}
}
