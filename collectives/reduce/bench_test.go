package reduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var benchSizes = []int{64 << 10, 1 << 20, 16 << 20}

// benchBufs returns two buffers of n bytes of finite, non-special values.
func benchBufs(dt DType, n int) (dst, src []byte) {
	rng := rand.New(rand.NewPCG(1, 1))
	dst, src = make([]byte, n), make([]byte, n)
	for _, b := range [][]byte{dst, src} {
		switch dt {
		case Float32:
			for i := range view[float32](b) {
				view[float32](b)[i] = rng.Float32()
			}
		case Float64:
			for i := range view[float64](b) {
				view[float64](b)[i] = rng.Float64()
			}
		case Float16:
			for i := range view[uint16](b) {
				view[uint16](b)[i] = f32ToF16(rng.Float32())
			}
		case BFloat16:
			for i := range view[uint16](b) {
				view[uint16](b)[i] = f32ToBF16(rng.Float32())
			}
		default:
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
		}
	}
	return dst, src
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkReduce reports bytes of dst per second; Copy is copy() of the
// same bytes, the yardstick.
func BenchmarkReduce(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("copy/%s", sizeName(n)), func(b *testing.B) {
			dst, src := benchBufs(Uint8, n)
			b.SetBytes(int64(n))
			for b.Loop() {
				copy(dst, src)
			}
		})
		for _, dt := range []DType{Float32, Float16, BFloat16, Float64, Int32} {
			for _, op := range []Op{Sum, Max} {
				b.Run(fmt.Sprintf("%s/%s/%s", dt, op, sizeName(n)), func(b *testing.B) {
					dst, src := benchBufs(dt, n)
					b.SetBytes(int64(n))
					for b.Loop() {
						Reduce(dt, op, dst, src)
					}
				})
			}
		}
	}
}

// BenchmarkReduceVsCopy times Reduce and a copy() of the same size in
// alternation and reports the best of each, which on a busy machine is a
// steadier measure than the mean: best-GB/s for Reduce, and copy% = the
// best copy time over the best Reduce time, in percent.
func BenchmarkReduceVsCopy(b *testing.B) {
	for _, n := range benchSizes {
		for _, dt := range []DType{Float32, Float16, BFloat16, Float64, Int32} {
			for _, op := range []Op{Sum, Max} {
				b.Run(fmt.Sprintf("%s/%s/%s", dt, op, sizeName(n)), func(b *testing.B) {
					dst, src := benchBufs(dt, n)
					cdst, csrc := benchBufs(Uint8, n)
					bestRun, bestCopy := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
					for b.Loop() {
						t0 := time.Now()
						copy(cdst, csrc)
						t1 := time.Now()
						Reduce(dt, op, dst, src)
						t2 := time.Now()
						bestCopy, bestRun = min(bestCopy, t1.Sub(t0)), min(bestRun, t2.Sub(t1))
					}
					b.ReportMetric(float64(n)/bestRun.Seconds()/1e9, "best-GB/s")
					b.ReportMetric(100*bestCopy.Seconds()/bestRun.Seconds(), "copy%")
				})
			}
		}
	}
}

// BenchmarkSmall compares the Go and C kernels around useC's thresholds.
func BenchmarkSmall(b *testing.B) {
	for _, n := range []int{64, 128, 256, 512, 1024, 4096} {
		for _, dt := range []DType{Float32, BFloat16} {
			dst, src := benchBufs(dt, n)
			b.Run(fmt.Sprintf("go/%s/%dB", dt, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					reduceGo(dt, Sum, dst, dst, src)
				}
			})
			b.Run(fmt.Sprintf("c/%s/%dB", dt, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					cReduce(dt, Sum, dst, dst, src)
				}
			})
		}
	}
}
