package hier_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// Every rank's all_reduce equals the rank-order reference, bit for bit,
// for every (dtype, op), size and layout, in place and not.
func TestAllReduce(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, pair := range validPairs() {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				for _, n := range elemCounts(dt == reduce.Float32 || dt == reduce.Int8) {
					for _, inPlace := range []bool{false, true} {
						seed := uint64(n)*131 + uint64(dt)*17 + uint64(op)
						inputs := make([][]byte, p)
						for r := range p {
							inputs[r] = input(dt, op, n, r, seed)
						}
						want := reference(dt, op, inputs)
						outs := make([][]byte, p)
						c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
							send := slices.Clone(inputs[r])
							recv := send
							if !inPlace {
								recv = make([]byte, len(send))
							}
							outs[r] = recv
							return comm.AllReduce(ctx, tag, send, recv, dt, op, testPreMul, collectives.Options{})
						})
						for r := range p {
							requireSameBytes(t, want, outs[r], "%s %s n=%d inPlace=%v rank %d", dt, op, n, inPlace, r)
						}
					}
				}
			}
		})
	}
}

// Sums of random floats round differently in different orders: every rank
// still ends with the same bits, and the same bits again on a second run.
func TestAllReduceBitwiseIdentical(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, dt := range []reduce.DType{reduce.Float32, reduce.BFloat16, reduce.Float16} {
				for _, op := range []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum} {
					n := 3001
					var first []byte
					for run := range 2 {
						outs := make([][]byte, p)
						c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
							outs[r] = make([]byte, n*dt.Size())
							return comm.AllReduce(ctx, tag, randomFloats(dt, n, r, 7), outs[r], dt, op, testPreMul, collectives.Options{ChunkBytes: 1 << 10})
						})
						for r := range p {
							requireSameBytes(t, outs[0], outs[r], "%s %s run %d: rank %d against rank 0", dt, op, run, r)
						}
						if run == 0 {
							first = outs[0]
						} else {
							requireSameBytes(t, first, outs[0], "%s %s: second run against the first", dt, op)
						}
					}
				}
			}
		})
	}
}

func TestAllGather(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, b := range []int{0, 1, 7, 224, 5003, 20011} {
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
						return comm.AllGather(ctx, tag, send, recv, collectives.Options{})
					})
					for r := range p {
						requireSameBytes(t, want, outs[r], "b=%d inPlace=%v rank %d", b, inPlace, r)
					}
				}
			}
		})
	}
}

func TestReduceScatter(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, pair := range validPairs() {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				for _, m := range elemCounts(dt == reduce.Float32) {
					for _, inPlace := range []bool{false, true} {
						b := m * dt.Size()
						seed := uint64(m)*977 + uint64(dt)*17 + uint64(op)
						inputs := make([][]byte, p)
						for r := range p {
							inputs[r] = input(dt, op, p*m, r, seed)
						}
						want := reference(dt, op, inputs)
						outs := make([][]byte, p)
						c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
							send := slices.Clone(inputs[r])
							recv := send[r*b : (r+1)*b]
							if !inPlace {
								recv = make([]byte, b)
							}
							outs[r] = recv
							return comm.ReduceScatter(ctx, tag, send, recv, dt, op, testPreMul)
						})
						for r := range p {
							requireSameBytes(t, want[r*b:(r+1)*b], outs[r], "%s %s m=%d inPlace=%v rank %d", dt, op, m, inPlace, r)
						}
					}
				}
			}
		})
	}
}

func TestBroadcast(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, n := range []int{0, 1, 7, 224, 20011} {
				for root := range p {
					want := pattern(n, root+100)
					outs := make([][]byte, p)
					c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
						recv := make([]byte, n)
						var send []byte
						if r == root {
							send = slices.Clone(want)
							if n%2 == 1 {
								recv = send // in place
							}
						}
						outs[r] = recv
						return comm.Broadcast(ctx, tag, send, recv, root, collectives.Options{ChunkBytes: 4 << 10})
					})
					for r := range p {
						requireSameBytes(t, want, outs[r], "n=%d root=%d rank %d", n, root, r)
					}
				}
			}
		})
	}
}

func TestReduce(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, pair := range validPairs() {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				for _, n := range elemCounts(false) {
					root := (n + int(op)) % p
					inPlace := n%2 == 0
					seed := uint64(n)*313 + uint64(dt)*17 + uint64(op)
					inputs := make([][]byte, p)
					for r := range p {
						inputs[r] = input(dt, op, n, r, seed)
					}
					want := reference(dt, op, inputs)
					var got []byte
					c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
						send := slices.Clone(inputs[r])
						var recv []byte
						if r == root {
							recv = send
							if !inPlace {
								recv = make([]byte, len(send))
							}
							got = recv
						}
						return comm.Reduce(ctx, tag, send, recv, dt, op, testPreMul, root, collectives.Options{})
					})
					requireSameBytes(t, want, got, "%s %s n=%d root=%d", dt, op, n, root)
				}
			}
		})
	}
}

// Ops of every kind, one after the other on the same Comm, keep every
// host's arena in step (each local rank runs the same arena operations in
// the same order whatever it carries across hosts).
func TestMixedOpsKeepArenasInStep(t *testing.T) {
	c := newCluster(t, []int{0, 0, 0, 1})
	p := 4
	for i := range 20 {
		n := 1 + i*37
		c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
			buf := input(reduce.Int32, reduce.Sum, n, r, uint64(i))
			switch i % 5 {
			case 0:
				return comm.AllReduce(ctx, tag, buf, buf, reduce.Int32, reduce.Sum, 0, collectives.Options{})
			case 1:
				return comm.AllGather(ctx, tag, buf, make([]byte, p*len(buf)), collectives.Options{})
			case 2:
				return comm.ReduceScatter(ctx, tag, slices.Repeat(buf, p), buf, reduce.Int32, reduce.Max, 0)
			case 3:
				return comm.Broadcast(ctx, tag, buf, buf, i%p, collectives.Options{})
			default:
				return comm.Reduce(ctx, tag, buf, buf, reduce.Int32, reduce.Min, 0, i%p, collectives.Options{})
			}
		})
	}
}

// Usage errors wrap collectives.ErrInvalidArgument before anything moves.
func TestInvalidArguments(t *testing.T) {
	c := newCluster(t, []int{0, 0, 1})
	tests := []struct {
		name string
		fn   func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error
	}{
		{"allreduce lengths", func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error {
			return comm.AllReduce(ctx, tag, make([]byte, 8), make([]byte, 4), reduce.Float32, reduce.Sum, 0, collectives.Options{})
		}},
		{"allreduce partial elements", func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error {
			return comm.AllReduce(ctx, tag, make([]byte, 6), make([]byte, 6), reduce.Float32, reduce.Sum, 0, collectives.Options{})
		}},
		{"allreduce bitwise float", func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error {
			return comm.AllReduce(ctx, tag, make([]byte, 4), make([]byte, 4), reduce.Float32, reduce.Band, 0, collectives.Options{})
		}},
		{"allgather recv", func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error {
			return comm.AllGather(ctx, tag, make([]byte, 4), make([]byte, 8), collectives.Options{})
		}},
		{"reducescatter send", func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error {
			return comm.ReduceScatter(ctx, tag, make([]byte, 8), make([]byte, 4), reduce.Float32, reduce.Sum, 0)
		}},
		{"broadcast root", func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error {
			return comm.Broadcast(ctx, tag, nil, make([]byte, 4), 3, collectives.Options{})
		}},
		{"reduce root", func(ctx context.Context, comm *hier.Comm, tag transport.Tag) error {
			return comm.Reduce(ctx, tag, make([]byte, 4), make([]byte, 4), reduce.Float32, reduce.Sum, 0, -1, collectives.Options{})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := c.runErr(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
				return tc.fn(ctx, comm, tag)
			})
			for r, err := range errs {
				require.ErrorIs(t, err, collectives.ErrInvalidArgument, "rank %d", r)
			}
		})
	}
}

func TestNewRejectsBadLayouts(t *testing.T) {
	tests := []struct {
		name  string
		hosts [][]int
	}{
		{"rank missing", [][]int{{0, 1}}},
		{"rank twice", [][]int{{0, 1}, {1, 2}}},
		{"out of range", [][]int{{0, 1}, {2, 3}}},
		{"unsorted", [][]int{{1, 0}, {2}}},
		{"empty host", [][]int{{0, 1}, {}, {2}}},
		{"shared host without arena", [][]int{{0}, {1, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hier.New(endpointOf(t, 3, 2), nil, hier.Layout{Hosts: tc.hosts})
			require.ErrorIs(t, err, collectives.ErrInvalidArgument)
		})
	}
}

// pattern is recognisable data for rank r.
func pattern(n, r int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + r*31 + n)
	}
	return b
}

// endpointOf is rank's endpoint of a fresh inproc group of p ranks.
func endpointOf(t *testing.T, p, rank int) transport.Endpoint {
	t.Helper()
	eps := inproc.NewGroup(p)
	t.Cleanup(func() {
		for _, ep := range eps {
			_ = ep.Close()
		}
	})
	return eps[rank]
}
