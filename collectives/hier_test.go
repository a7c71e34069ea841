package collectives_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// hierLayouts are the hierarchies of the tests: hosts in rank order, hosts
// with interleaved ranks (case B's fast pairs), uneven counts of groups and
// members, and the degenerate one-group and one-member splits.
var hierLayouts = []struct {
	name   string
	groups [][]int
}{
	{"2x2", [][]int{{0, 1}, {2, 3}}},
	{"pairs", [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
	{"2x3 shuffled", [][]int{{5, 1, 3}, {0, 4, 2}}},
	{"3x2", [][]int{{0, 1}, {2, 3}, {4, 5}}},
	{"1x3", [][]int{{2, 0, 1}}},
	{"3x1", [][]int{{0}, {2}, {1}}},
}

// hierRun runs fn on every rank of an inproc group of p ranks, with a
// deadline, and returns each rank's error.
func hierRun(t *testing.T, p int, fn func(ctx context.Context, ep transport.Endpoint) error) []error {
	t.Helper()
	eps := inproc.NewGroup(p)
	t.Cleanup(func() {
		for _, ep := range eps {
			_ = ep.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = fn(ctx, ep)
		}()
	}
	wg.Wait()
	return errs
}

func hierNoErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

// hierInput is rank r's input of n elements of dt: small integers (exact in
// every type and under every op the tests use), different per rank and
// element.
func hierInput(dt reduce.DType, r, n int) []byte {
	b := make([]byte, n*dt.Size())
	for i := range n {
		v := (r*7+i*3)%11 + 1
		switch dt {
		case reduce.Float32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case reduce.Int32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		default:
			panic("hierInput: unsupported dtype")
		}
	}
	return b
}

// flatAllReduce is the reference: the ordinary ring all_reduce.
func flatAllReduce(t *testing.T, p int, dt reduce.DType, op reduce.Op, preMul float64, n int) []byte {
	t.Helper()
	out := make([][]byte, p)
	hierNoErrors(t, hierRun(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		out[r] = make([]byte, n*dt.Size())
		return collectives.AllReduce(ctx, ep, 1, hierInput(dt, r, n), out[r], dt, op, collectives.Options{Algo: collectives.Ring, PreMul: preMul})
	}))
	return out[0]
}

func TestHierAllReduce(t *testing.T) {
	ops := []struct {
		dt     reduce.DType
		op     reduce.Op
		preMul float64
	}{
		{reduce.Float32, reduce.Sum, 0},
		{reduce.Float32, reduce.Avg, 0},
		{reduce.Float32, reduce.PreMulSum, 0.5},
		{reduce.Float32, reduce.Max, 0},
		{reduce.Int32, reduce.Sum, 0},
		{reduce.Int32, reduce.Avg, 0},
	}
	for _, l := range hierLayouts {
		p := len(l.groups) * len(l.groups[0])
		for _, c := range ops {
			for _, n := range []int{0, 1, 5, 1000} {
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("%s/%v/%v/n=%d/inplace=%v", l.name, c.dt, c.op, n, inPlace)
					t.Run(name, func(t *testing.T) {
						want := flatAllReduce(t, p, c.dt, c.op, c.preMul, n)
						got := make([][]byte, p)
						h := collectives.Hierarchy{Groups: l.groups}
						hierNoErrors(t, hierRun(t, p, func(ctx context.Context, ep transport.Endpoint) error {
							r := ep.Rank()
							send := hierInput(c.dt, r, n)
							got[r] = send
							if !inPlace {
								got[r] = make([]byte, len(send))
							}
							o := collectives.Options{PreMul: c.preMul, ChunkBytes: 64}
							return collectives.HierAllReduce(ctx, ep, 9, send, got[r], c.dt, c.op, h, o)
						}))
						for r := range p {
							require.Equal(t, want, got[r], "rank %d", r)
						}
					})
				}
			}
		}
	}
}

func TestHierAllGatherReduceScatterBroadcast(t *testing.T) {
	for _, l := range hierLayouts {
		p := len(l.groups) * len(l.groups[0])
		h := collectives.Hierarchy{Groups: l.groups}
		for _, n := range []int{0, 3, 257} {
			t.Run(fmt.Sprintf("allgather/%s/n=%d", l.name, n), func(t *testing.T) {
				want := make([]byte, 0, p*n*4)
				for r := range p {
					want = append(want, hierInput(reduce.Int32, r, n)...)
				}
				got := make([][]byte, p)
				hierNoErrors(t, hierRun(t, p, func(ctx context.Context, ep transport.Endpoint) error {
					r := ep.Rank()
					got[r] = make([]byte, p*n*4)
					own := got[r][r*n*4 : (r+1)*n*4] // in place
					copy(own, hierInput(reduce.Int32, r, n))
					return collectives.HierAllGather(ctx, ep, 3, own, got[r], h, collectives.Options{})
				}))
				for r := range p {
					require.Equal(t, want, got[r], "rank %d", r)
				}
			})
			t.Run(fmt.Sprintf("reducescatter/%s/n=%d", l.name, n), func(t *testing.T) {
				full := flatAllReduce(t, p, reduce.Float32, reduce.Avg, 0, p*n)
				got := make([][]byte, p)
				hierNoErrors(t, hierRun(t, p, func(ctx context.Context, ep transport.Endpoint) error {
					r := ep.Rank()
					got[r] = make([]byte, n*4)
					return collectives.HierReduceScatter(ctx, ep, 4, hierInput(reduce.Float32, r, p*n), got[r], reduce.Float32, reduce.Avg, h, collectives.Options{})
				}))
				for r := range p {
					require.Equal(t, full[r*n*4:(r+1)*n*4], got[r], "rank %d", r)
				}
			})
			for _, root := range []int{0, p - 1} {
				t.Run(fmt.Sprintf("broadcast/%s/n=%d/root=%d", l.name, n, root), func(t *testing.T) {
					want := hierInput(reduce.Int32, root, n)
					got := make([][]byte, p)
					hierNoErrors(t, hierRun(t, p, func(ctx context.Context, ep transport.Endpoint) error {
						r := ep.Rank()
						got[r] = make([]byte, n*4)
						var send []byte
						if r == root {
							send = want
						}
						return collectives.HierBroadcast(ctx, ep, 5, send, got[r], root, h, collectives.Options{ChunkBytes: 256})
					}))
					for r := range p {
						require.Equal(t, want, got[r], "rank %d", r)
					}
				})
			}
		}
	}
}

func TestHierRejectsBadHierarchy(t *testing.T) {
	cases := []struct {
		name   string
		groups [][]int
	}{
		{"none", nil},
		{"uneven", [][]int{{0, 1, 2}, {3}}},
		{"duplicate", [][]int{{0, 1}, {1, 3}}},
		{"too few ranks", [][]int{{0, 1}}},
		{"out of range", [][]int{{0, 1}, {2, 4}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := hierRun(t, 4, func(ctx context.Context, ep transport.Endpoint) error {
				buf := make([]byte, 16)
				return collectives.HierAllReduce(ctx, ep, 1, buf, buf, reduce.Float32, reduce.Sum, collectives.Hierarchy{Groups: c.groups}, collectives.Options{})
			})
			for r, err := range errs {
				require.ErrorIs(t, err, collectives.ErrInvalidArgument, "rank %d", r)
			}
		})
	}
}

// TestOrderedRings: rings along a permutation give the same results as in
// rank order, blocks in their rank-order places.
func TestOrderedRings(t *testing.T) {
	const p, n = 5, 37
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {0, 3, 1, 4, 2}, {4, 2, 0, 1, 3}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			want := flatAllReduce(t, p, reduce.Int32, reduce.Sum, 0, p*n)
			type result struct{ ar, ag, rs, bc []byte }
			got := make([]result, p)
			hierNoErrors(t, hierRun(t, p, func(ctx context.Context, ep transport.Endpoint) error {
				r := ep.Rank()
				in := hierInput(reduce.Int32, r, p*n)
				res := result{ar: make([]byte, len(in)), ag: make([]byte, p*len(in)), rs: make([]byte, n*4), bc: make([]byte, len(in))}
				o := collectives.Options{Algo: collectives.Ring, ChunkBytes: 32}
				if err := collectives.OrderedAllReduce(ctx, ep, 1, in, res.ar, reduce.Int32, reduce.Sum, order, o); err != nil {
					return err
				}
				if err := collectives.OrderedAllGather(ctx, ep, 2, in, res.ag, order, collectives.Options{}); err != nil {
					return err
				}
				if err := collectives.OrderedReduceScatter(ctx, ep, 3, in, res.rs, reduce.Int32, reduce.Sum, order, collectives.Options{}); err != nil {
					return err
				}
				if err := collectives.OrderedBroadcast(ctx, ep, 4, in, res.bc, 3, order, collectives.Options{Algo: collectives.Chain, ChunkBytes: 64}); err != nil {
					return err
				}
				got[r] = res
				return nil
			}))
			var gathered []byte
			for r := range p {
				gathered = append(gathered, hierInput(reduce.Int32, r, p*n)...)
			}
			for r := range p {
				require.Equal(t, want, got[r].ar, "allreduce rank %d", r)
				require.Equal(t, gathered, got[r].ag, "allgather rank %d", r)
				require.Equal(t, want[r*n*4:(r+1)*n*4], got[r].rs, "reducescatter rank %d", r)
				require.Equal(t, hierInput(reduce.Int32, 3, p*n), got[r].bc, "broadcast rank %d", r)
			}
		})
	}
	errs := hierRun(t, 3, func(ctx context.Context, ep transport.Endpoint) error {
		buf := make([]byte, 12)
		return collectives.OrderedAllReduce(ctx, ep, 1, buf, buf, reduce.Int32, reduce.Sum, []int{0, 1, 1}, collectives.Options{})
	})
	for _, err := range errs {
		require.ErrorIs(t, err, collectives.ErrInvalidArgument)
	}
}
