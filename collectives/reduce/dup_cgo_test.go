//go:build cgo

package reduce

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCReduceDupMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, isa := range isaLevels {
		for _, dt := range AllDTypes {
			for _, op := range AllOps {
				if Check(dt, op) != nil {
					continue
				}
				for _, n := range append(testLengths, 5000) {
					what := fmt.Sprintf("isa %d %s %s n=%d", isa, dt, op, n)
					a := randomBuf(rng, dt, n, rng.IntN(8))
					b := randomBuf(rng, dt, n, rng.IntN(8))
					want := randomBuf(rng, dt, n, 0)
					reduceGo(dt, op, want, a, b)

					got, dup := randomBuf(rng, dt, n, rng.IntN(8)), randomBuf(rng, dt, n, rng.IntN(8))
					require.True(t, cReduceDupDivideAt(isa, dt, op, got, dup, a, b, 1), what)
					requireSame(t, dt, want, got, a, b, what)
					requireSame(t, dt, want, dup, a, b, what+" dup")

					// dst aliasing a, then b, as an in-place all_reduce does.
					inA, dupA := append([]byte(nil), a...), randomBuf(rng, dt, n, 0)
					require.True(t, cReduceDupDivideAt(isa, dt, op, inA, dupA, inA, b, 1), what)
					requireSame(t, dt, want, inA, a, b, what+" dst=a")
					requireSame(t, dt, want, dupA, a, b, what+" dst=a dup")
					inB, dupB := append([]byte(nil), b...), randomBuf(rng, dt, n, 0)
					require.True(t, cReduceDupDivideAt(isa, dt, op, inB, dupB, a, inB, 1), what)
					requireSame(t, dt, want, inB, a, b, what+" dst=b")
					requireSame(t, dt, want, dupB, a, b, what+" dst=b dup")

					// dup aliasing a, as the last pass of p > 2 ranks does.
					dupIsA := append([]byte(nil), a...)
					require.True(t, cReduceDupDivideAt(isa, dt, op, got, dupIsA, dupIsA, b, 1), what)
					requireSame(t, dt, want, got, a, b, what+" dup=a")
					requireSame(t, dt, want, dupIsA, a, b, what+" dup=a dup")
				}
			}
		}
	}
}

func TestCReduceDupInvalidPairIsNotHandled(t *testing.T) {
	for _, isa := range isaLevels {
		dst, dup := raw[float32](1, 2), raw[float32](0, 0)
		require.False(t, cReduceDupDivideAt(isa, Float32, Bxor, dst, dup, dst, dst, 1))
		require.Equal(t, raw[float32](1, 2), dst)
	}
}

func TestCReduceDupDivideMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, isa := range isaLevels {
		for _, dt := range []DType{Float32, Float64, Float16, BFloat16} {
			for _, n := range append(testLengths, 5000) {
				for _, divisor := range []int{1, 3} {
					what := fmt.Sprintf("isa %d %s n=%d divisor=%d", isa, dt, n, divisor)
					a := randomBuf(rng, dt, n, rng.IntN(8))
					b := randomBuf(rng, dt, n, rng.IntN(8))
					want := randomBuf(rng, dt, n, 0)
					reduceGo(dt, Avg, want, a, b)
					if divisor > 1 {
						divideGo(dt, want, divisor)
					}
					inA, dup := append([]byte(nil), a...), randomBuf(rng, dt, n, rng.IntN(8))
					require.True(t, cReduceDupDivideAt(isa, dt, Avg, inA, dup, inA, b, divisor), what)
					requireSame(t, dt, want, inA, a, b, what+" dst=a")
					requireSame(t, dt, want, dup, a, b, what+" dup")
				}
			}
		}
		// Integers are left to Go, untouched.
		dst, dup := raw[int32](1, 2), raw[int32](0, 0)
		require.False(t, cReduceDupDivideAt(isa, Int32, Avg, dst, dup, dst, dst, 2))
		require.Equal(t, raw[int32](1, 2), dst)
	}
}
