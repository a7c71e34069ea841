package intra

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// benchSizes are the payload sizes of the benchmarks, in bytes.
var benchSizes = []int{8, 64 << 10, 1 << 20, 16 << 20, 128 << 20, 512 << 20}

// benchOp is one rank's call of the benchmarked collective.
type benchOp func(ctx context.Context, a *arena.Arena, rank int, seq uint64, send, recv []byte) error

// benchWorld runs op on 2 ranks as goroutines locked to OS threads, b.N
// times after a warm-up, and reports busbw (nccl-tests definition, factor
// busFactor of algbw) besides the time per op.
func benchWorld(b *testing.B, n, sendLen, recvLen int, busFactor float64, op benchOp) {
	const p = 2
	w := newWorld(b, p, arena.Config{})
	bufs := make([][2][]byte, p)
	for r := range p {
		bufs[r] = [2][]byte{make([]byte, sendLen), make([]byte, recvLen)}
		for i := range bufs[r][0] {
			bufs[r][0][i] = byte(i + r)
		}
	}
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, p)
	var elapsed time.Duration
	warm := 2 + min(20, (64<<20)/max(n, 1))
	for r, a := range w.arenas {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			seq := uint64(0)
			for range warm {
				seq++
				if errs[r] = op(ctx, a, r, seq, bufs[r][0], bufs[r][1]); errs[r] != nil {
					return
				}
			}
			if r == 0 {
				<-start
			}
			t0 := time.Now()
			for range b.N {
				seq++
				if errs[r] = op(ctx, a, r, seq, bufs[r][0], bufs[r][1]); errs[r] != nil {
					return
				}
			}
			if r == 0 {
				elapsed = time.Since(t0)
			}
		})
	}
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	for r := range p {
		require.NoError(b, errs[r])
	}
	per := elapsed.Seconds() / float64(b.N)
	b.ReportMetric(per*1e6, "us/op")
	b.ReportMetric(float64(n)/per/1e9*busFactor, "busGB/s")
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func BenchmarkAllReduce(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			benchWorld(b, n, n, n, 1, func(ctx context.Context, a *arena.Arena, _ int, seq uint64, send, recv []byte) error {
				return AllReduce(ctx, a, seq, send, recv, reduce.Float32, reduce.Sum, 0)
			})
		})
	}
}
