package reduce

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReduce3DupDivideByOne(t *testing.T) {
	for _, n := range []int{3, 1000} { // below and above the C threshold
		av, bv, wv := make([]int32, n), make([]int32, n), make([]int32, n)
		for i := range av {
			av[i], bv[i] = int32(i), int32(2*i+1)
			wv[i] = av[i] + bv[i]
		}
		a, b, want := raw(av...), raw(bv...), raw(wv...)
		dst, dup := make([]byte, len(a)), make([]byte, len(a))
		Reduce3DupDivide(Int32, Sum, dst, dup, a, b, 1)
		require.Equal(t, want, dst)
		require.Equal(t, want, dup)

		// dst aliasing a; an invalid pair leaves everything alone.
		Reduce3DupDivide(Int32, Sum, a, dup, a, b, 1)
		require.Equal(t, want, a)
		Reduce3DupDivide(Float32, Bxor, a, dup, b, b, 1)
		require.Equal(t, want, a)
	}
}

func TestReduce3DupDivide(t *testing.T) {
	for _, n := range []int{3, 1000} { // below and above the C threshold
		av, bv, wv := make([]int32, n), make([]int32, n), make([]int32, n)
		fa, fb, fw := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range av {
			av[i], bv[i] = int32(i), int32(-3*i-1)
			wv[i] = (av[i] + bv[i]) / 3 // truncating, as DivideBy
			fa[i], fb[i] = float32(i), float32(2*i+1)
			fw[i] = (fa[i] + fb[i]) / 3
		}
		for _, c := range []struct {
			dt         DType
			a, b, want []byte
		}{{Int32, raw(av...), raw(bv...), raw(wv...)}, {Float32, raw(fa...), raw(fb...), raw(fw...)}} {
			dup := make([]byte, len(c.a))
			Reduce3DupDivide(c.dt, Avg, c.a, dup, c.a, c.b, 3)
			require.Equal(t, c.want, c.a, "%s", c.dt)
			require.Equal(t, c.want, dup, "%s", c.dt)
		}
	}
}
