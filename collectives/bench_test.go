package collectives_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// Benchmarks over in-process endpoints, b.N calls on every rank, each
// under its own tag. For loopback TCP see cmd/allreduce-bench.

func benchRanks(b *testing.B, p, nbytes int, call func(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte) error) {
	eps := inproc.NewGroup(p)
	defer func() {
		for _, ep := range eps {
			_ = ep.Close()
		}
	}()
	b.SetBytes(int64(nbytes))
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make([]error, p)
	for r, ep := range eps {
		send, recv := make([]byte, nbytes), make([]byte, nbytes)
		wg.Go(func() {
			for i := range b.N {
				if err := call(context.Background(), ep, transport.Tag(i), send, recv); err != nil {
					errs[r] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAllReduce(b *testing.B) {
	for _, p := range []int{2, 4, 8} {
		for _, n := range []int{1 << 10, 16 << 10, 64 << 10, 256 << 10, 4 << 20} {
			for _, algo := range allReduceAlgos {
				b.Run(fmt.Sprintf("p%d/%dB/%s", p, n, algo), func(b *testing.B) {
					o := collectives.Options{Algo: algo}
					benchRanks(b, p, n, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte) error {
						return collectives.AllReduce(ctx, ep, tag, send, recv, reduce.Float32, reduce.Sum, o)
					})
				})
			}
		}
	}
}

func BenchmarkBroadcast(b *testing.B) {
	for _, p := range []int{2, 4, 8} {
		for _, n := range []int{1 << 10, 16 << 10, 64 << 10, 256 << 10, 4 << 20} {
			for _, algo := range []collectives.Algorithm{collectives.Tree, collectives.Chain} {
				b.Run(fmt.Sprintf("p%d/%dB/%s", p, n, algo), func(b *testing.B) {
					o := collectives.Options{Algo: algo}
					benchRanks(b, p, n, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte) error {
						return collectives.Broadcast(ctx, ep, tag, send, recv, 0, o)
					})
				})
			}
		}
	}
}

func BenchmarkReduce(b *testing.B) {
	for _, p := range []int{2, 4, 8} {
		for _, n := range []int{1 << 10, 16 << 10, 64 << 10, 256 << 10, 4 << 20} {
			for _, algo := range []collectives.Algorithm{collectives.Tree, collectives.Chain} {
				b.Run(fmt.Sprintf("p%d/%dB/%s", p, n, algo), func(b *testing.B) {
					o := collectives.Options{Algo: algo}
					benchRanks(b, p, n, func(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte) error {
						return collectives.Reduce(ctx, ep, tag, send, recv, reduce.Float32, reduce.Sum, 0, o)
					})
				})
			}
		}
	}
}
