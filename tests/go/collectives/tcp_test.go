// Package collectives_test runs the collectives over real loopback TCP
// endpoints (all ranks in this process, each with its own Listener): a
// subset of the in-process matrix of collectives/, plus peer death.
package collectives_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// group is np connected TCP endpoints. Cases share a group, each call
// under a fresh tag, as a communicator numbers its collectives.
type group struct {
	eps []transport.Endpoint
	tag atomic.Uint64
}

func connectGroup(t *testing.T, np int) *group {
	t.Helper()
	ls := make([]*tcp.Listener, np)
	addrs := make([]string, np)
	for i := range np {
		l, err := tcp.Listen("127.0.0.1:0")
		require.NoError(t, err)
		ls[i], addrs[i] = l, l.Addr()
	}
	cfg := tcp.Config{Secret: []byte("collectives test"), ConnectTimeout: 20 * time.Second}
	g := &group{eps: make([]transport.Endpoint, np)}
	errs := make([]error, np)
	var wg sync.WaitGroup
	for i := range np {
		wg.Go(func() { g.eps[i], errs[i] = tcp.Connect(context.Background(), ls[i], i, addrs, cfg) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, ep := range g.eps {
			if ep != nil {
				_ = ep.Close()
			}
		}
	})
	for i, err := range errs {
		require.NoError(t, err, "connect rank %d", i)
	}
	return g
}

// run calls fn on every rank under one new tag and fails on any error.
func (g *group) run(t *testing.T, fn func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error) {
	t.Helper()
	errs := g.runErr(t, 30*time.Second, fn)
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

func (g *group) runErr(t *testing.T, timeout time.Duration, fn func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error) []error {
	t.Helper()
	tag := transport.Tag(g.tag.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errs := make([]error, len(g.eps))
	var wg sync.WaitGroup
	for r, ep := range g.eps {
		wg.Go(func() { errs[r] = fn(ctx, ep, tag) })
	}
	wg.Wait()
	return errs
}

// input is rank r's data: small integers (exactly summable in every type)
// from a generator seeded by the case.
func input(name string, r int, dt reduce.DType, n int) []byte {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(r)))
	buf := make([]byte, n*dt.Size())
	for i := range n {
		v := rng.IntN(7) - 3
		if !dt.IsFloat() && dt != reduce.Bool {
			v = rng.IntN(256)
		}
		putSmall(dt, buf[i*dt.Size():], v)
	}
	return buf
}

// putSmall writes a small integer v as one element of dt.
func putSmall(dt reduce.DType, b []byte, v int) {
	switch dt {
	case reduce.Float32:
		bits := float32bits(float32(v))
		for i := range 4 {
			b[i] = byte(bits >> (8 * i))
		}
	case reduce.Int32:
		for i := range 4 {
			b[i] = byte(uint32(int32(v)) >> (8 * i))
		}
	case reduce.BFloat16: // the top half of the float32
		bits := float32bits(float32(v))
		b[0], b[1] = byte(bits>>16), byte(bits>>24)
	case reduce.Uint8:
		b[0] = byte(v)
	}
}

// reference folds the inputs in rank order with the kernels.
func reference(dt reduce.DType, op reduce.Op, preMul float64, ins [][]byte) []byte {
	prep := func(in []byte) []byte {
		out := append([]byte(nil), in...)
		if op == reduce.PreMulSum {
			reduce.Scale(dt, out, in, preMul)
		}
		return out
	}
	acc := prep(ins[0])
	for _, in := range ins[1:] {
		reduce.Reduce(dt, op, acc, prep(in))
	}
	if op == reduce.Avg {
		reduce.DivideBy(dt, acc, len(ins))
	}
	return acc
}

var (
	dtypes = []reduce.DType{reduce.Uint8, reduce.Int32, reduce.BFloat16, reduce.Float32}
	ops    = []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum, reduce.Max, reduce.Prod}
)

func countsFor(p int) []int {
	if raceEnabled {
		return []int{0, 1, 7, p - 1, 1000, 30001}
	}
	return []int{0, 1, 7, p - 1, 1000, 300001}
}

func TestCollectivesOverTCP(t *testing.T) {
	for _, p := range []int{2, 3, 4} {
		g := connectGroup(t, p)
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			for _, n := range countsFor(p) {
				for _, dt := range dtypes {
					for _, op := range ops {
						if reduce.Check(dt, op) != nil || (n > 1000 && op != reduce.Sum) {
							continue
						}
						name := fmt.Sprintf("%s/%s/n%d", dt, op, n)
						t.Run("allreduce/"+name, func(t *testing.T) { testAllReduce(t, g, name, dt, op, n) })
						t.Run("reduce/"+name, func(t *testing.T) { testReduce(t, g, name, dt, op, n) })
						t.Run("reducescatter/"+name, func(t *testing.T) { testReduceScatter(t, g, name, dt, op, n/p+n%2) })
					}
				}
				t.Run(fmt.Sprintf("movement/n%d", n), func(t *testing.T) { testMovement(t, g, n) })
			}
		})
	}
}

func testAllReduce(t *testing.T, g *group, name string, dt reduce.DType, op reduce.Op, n int) {
	p := len(g.eps)
	ins := make([][]byte, p)
	for r := range p {
		ins[r] = input(name, r, dt, n)
	}
	want := reference(dt, op, 0.5, ins)
	for _, algo := range []collectives.Algorithm{collectives.Ring, collectives.RecursiveDoubling, collectives.HalvingDoubling} {
		outs := make([][]byte, p)
		o := collectives.Options{Algo: algo, PreMul: 0.5, ChunkBytes: 64 << 10}
		g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
			outs[ep.Rank()] = make([]byte, len(want))
			return collectives.AllReduce(ctx, ep, tag, ins[ep.Rank()], outs[ep.Rank()], dt, op, o)
		})
		for r := range p {
			requireBytes(t, want, outs[r], "%s rank %d", algo, r)
		}
	}
}

func testReduce(t *testing.T, g *group, name string, dt reduce.DType, op reduce.Op, n int) {
	p := len(g.eps)
	ins := make([][]byte, p)
	for r := range p {
		ins[r] = input(name, r, dt, n)
	}
	want := reference(dt, op, 0.5, ins)
	root := n % p
	for _, algo := range []collectives.Algorithm{collectives.Tree, collectives.Chain} {
		out := make([]byte, len(want))
		o := collectives.Options{Algo: algo, PreMul: 0.5, ChunkBytes: 64 << 10}
		g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
			var recv []byte
			if ep.Rank() == root {
				recv = out
			}
			return collectives.Reduce(ctx, ep, tag, ins[ep.Rank()], recv, dt, op, root, o)
		})
		requireBytes(t, want, out, "%s", algo)
	}
}

func testReduceScatter(t *testing.T, g *group, name string, dt reduce.DType, op reduce.Op, per int) {
	p, es := len(g.eps), dt.Size()
	ins := make([][]byte, p)
	for r := range p {
		ins[r] = input(name, r, dt, per*p)
	}
	want := reference(dt, op, 0.5, ins)
	outs := make([][]byte, p)
	g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
		outs[ep.Rank()] = make([]byte, per*es)
		return collectives.ReduceScatter(ctx, ep, tag, ins[ep.Rank()], outs[ep.Rank()], dt, op, collectives.Options{PreMul: 0.5})
	})
	for r := range p {
		requireBytes(t, want[r*per*es:(r+1)*per*es], outs[r], "rank %d", r)
	}
}

// testMovement checks broadcast, all_gather, gather, scatter, all_to_all_v
// and barrier with blocks of n bytes.
func testMovement(t *testing.T, g *group, n int) {
	p := len(g.eps)
	blocks := make([][]byte, p)
	all := []byte{}
	for r := range p {
		blocks[r] = input(fmt.Sprintf("move%d", n), r, reduce.Uint8, n)
		all = append(all, blocks[r]...)
	}
	root := n % p
	for _, algo := range []collectives.Algorithm{collectives.Tree, collectives.Chain} {
		outs := make([][]byte, p)
		g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
			outs[ep.Rank()] = make([]byte, n)
			return collectives.Broadcast(ctx, ep, tag, blocks[root], outs[ep.Rank()], root, collectives.Options{Algo: algo})
		})
		for r := range p {
			requireBytes(t, blocks[root], outs[r], "broadcast %s rank %d", algo, r)
		}
	}
	gathered := make([][]byte, p)
	g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
		gathered[ep.Rank()] = make([]byte, p*n)
		return collectives.AllGather(ctx, ep, tag, blocks[ep.Rank()], gathered[ep.Rank()], collectives.Options{})
	})
	for r := range p {
		requireBytes(t, all, gathered[r], "allgather rank %d", r)
	}
	atRoot := make([]byte, p*n)
	g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
		var recv []byte
		if ep.Rank() == root {
			recv = atRoot
		}
		return collectives.Gather(ctx, ep, tag, blocks[ep.Rank()], recv, root, collectives.Options{})
	})
	requireBytes(t, all, atRoot, "gather")
	scattered := make([][]byte, p)
	g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
		scattered[ep.Rank()] = make([]byte, n)
		return collectives.Scatter(ctx, ep, tag, all, scattered[ep.Rank()], root, collectives.Options{})
	})
	for r := range p {
		requireBytes(t, blocks[r], scattered[r], "scatter rank %d", r)
	}
	// all_to_all_v: rank i sends block j of size (i+j)%3 * n/2 from all.
	size := func(i, j int) int { return (i + j) % 3 * (n / 2) }
	layout := func(r int, send bool) (counts, displs []int) {
		counts, displs = make([]int, p), make([]int, p)
		off := 0
		for j := range p {
			if send {
				counts[j] = size(r, j)
			} else {
				counts[j] = size(j, r)
			}
			displs[j], off = off, off+counts[j]
		}
		return counts, displs
	}
	recvd := make([][]byte, p)
	sent := make([][]byte, p)
	g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
		r := ep.Rank()
		sc, sd := layout(r, true)
		rc, rd := layout(r, false)
		sent[r] = input(fmt.Sprintf("a2a%d", n), r, reduce.Uint8, sd[p-1]+sc[p-1])
		recvd[r] = make([]byte, rd[p-1]+rc[p-1])
		return collectives.AllToAllV(ctx, ep, tag, sent[r], sc, sd, recvd[r], rc, rd, collectives.Options{})
	})
	for i := range p {
		_, rd := layout(i, false)
		for j := range p {
			_, sd := layout(j, true)
			requireBytes(t, sent[j][sd[i]:sd[i]+size(j, i)], recvd[i][rd[j]:rd[j]+size(j, i)], "alltoallv %d->%d", j, i)
		}
	}
	g.run(t, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
		return collectives.Barrier(ctx, ep, tag)
	})
}

// TestPeerDeathOverTCP: a rank closes its endpoint in the middle of a
// large ring all_reduce; the other rank fails promptly with an error
// naming it.
func TestPeerDeathOverTCP(t *testing.T) {
	g := connectGroup(t, 2)
	n := 16 << 20
	start := time.Now()
	errs := g.runErr(t, 20*time.Second, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
		buf := make([]byte, n)
		if ep.Rank() == 1 {
			sent := make(chan struct{})
			go func() {
				select {
				case <-sent:
					_ = ep.Close()
				case <-ctx.Done():
				}
			}()
			ep = &signalFirstSend{Endpoint: ep, sent: sent}
		}
		return collectives.AllReduce(ctx, ep, tag, buf, buf, reduce.Float32, reduce.Sum, collectives.Options{Algo: collectives.Ring, ChunkBytes: 64 << 10})
	})
	require.Less(t, time.Since(start), 10*time.Second)
	require.Error(t, errs[0])
	var pe *transport.PeerError
	require.True(t, errors.As(errs[0], &pe), "%v", errs[0])
	require.Equal(t, 1, pe.Peer)
	require.Contains(t, errs[0].Error(), "allreduce rank 0")
}

// signalFirstSend closes sent once the first Send through it returned:
// from then on the collective it runs is under way.
type signalFirstSend struct {
	transport.Endpoint
	sent chan struct{}
	once sync.Once
}

func (s *signalFirstSend) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	err := s.Endpoint.Send(ctx, peer, tag, data)
	s.once.Do(func() { close(s.sent) })
	return err
}

// requireBytes compares byte slices, an empty one equal to nil.
func requireBytes(t *testing.T, want, got []byte, msgAndArgs ...any) {
	t.Helper()
	if !bytes.Equal(want, got) {
		require.Equal(t, want, got, msgAndArgs...)
	}
}

func float32bits(f float32) uint32 { return math.Float32bits(f) }
