package collectives

import (
	"math"
	"testing"
)

// Codec throughput on one 256 KiB chunk of float32 (the default chunk):
// the CPU a compressed all_reduce spends per element beside the transfer.
func BenchmarkCodec(b *testing.B) {
	const n = 64 << 10
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i))) * 1e-2
	}
	src := f32Bytes(xs...)
	scratch := make([]byte, len(src))
	dst := make([]byte, len(src))
	for _, c := range []Compression{CompressFloat16, CompressBFloat16} {
		codec := newWireCodec(c)
		w := make([]byte, wireBytes(n))
		b.Run(string(c)+"/encode", func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for range b.N {
				codec.encode(w, src, scratch)
			}
		})
		b.Run(string(c)+"/decodeAdd", func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for range b.N {
				codec.decodeAdd(dst, src, w, scratch)
			}
		})
		b.Run(string(c)+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for range b.N {
				codec.decode(dst, w)
			}
		})
	}
	b.Run("maxAbsBits", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for range b.N {
			maxAbsBits(src)
		}
	})
}
