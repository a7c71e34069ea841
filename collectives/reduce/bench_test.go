package reduce

import (
	"fmt"
	"math/rand/v2"
	"testing"
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
