package collectives_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// Helpers of the compression and sparse tests (kept apart from the shared
// helpers of the other collective tests).

// inWorld runs fn on every rank of a fresh in-process group of p ranks,
// with a deadline, and returns each rank's error.
func inWorld(t testing.TB, p int, fn func(ctx context.Context, ep transport.Endpoint) error) []error {
	t.Helper()
	eps := inproc.NewGroup(p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make([]error, p)
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() { errs[i] = fn(ctx, ep) })
	}
	wg.Wait()
	for _, ep := range eps {
		require.NoError(t, ep.Close())
	}
	return errs
}

func noErrors(t testing.TB, errs []error) {
	t.Helper()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

func putF32s(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func getF32s(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.NativeEndian.Uint32(b[4*i:]))
	}
	return xs
}

// gradientLike returns n float32 values with magnitudes spread over six
// decades around scale, both signs, as gradients are.
func gradientLike(rng *rand.Rand, n int, scale float64) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		mag := scale * math.Pow(10, -6*rng.Float64())
		if rng.IntN(2) == 0 {
			mag = -mag
		}
		xs[i] = float32(mag)
	}
	return xs
}
