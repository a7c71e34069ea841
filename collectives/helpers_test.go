package collectives_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

const testTag transport.Tag = 42

// opTimeout bounds every collective call of a test; a hang beyond it
// (plus a grace period) fails the test instead of blocking the suite.
const opTimeout = 30 * time.Second

// worlds are the world sizes of the test matrix.
var worlds = []int{1, 2, 3, 4, 8}

// bigCount is the largest element count of the matrix: over a MiB and not
// a multiple of any world size or chunk.
const bigCount = 1<<20 + 3

// counts returns the element counts tested at world size p.
func counts(p int) []int {
	c := []int{0, 1, 7, 1000, bigCount}
	if p > 1 {
		c = append(c, p-1)
	}
	return c
}

// rankFunc is one rank's part of a test.
type rankFunc func(ctx context.Context, ep transport.Endpoint) error

// runRanks runs fn on every rank of a fresh in-process group of p ranks and
// returns each rank's error. It fails the test if a rank does not return.
func runRanks(t testing.TB, p int, fn rankFunc) []error {
	t.Helper()
	return runOn(t, inproc.NewGroup(p), opTimeout, fn)
}

// runOn runs fn on every endpoint with a shared deadline, then closes them.
func runOn(t testing.TB, eps []transport.Endpoint, timeout time.Duration, fn rankFunc) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(ctx, ep)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout + 10*time.Second):
		t.Fatalf("ranks did not return within %v of their deadline", 10*time.Second)
	}
	for _, ep := range eps {
		require.NoError(t, ep.Close())
	}
	return errs
}

// requireAllOK fails unless every rank returned nil.
func requireAllOK(t testing.TB, errs []error) {
	t.Helper()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

// requireSameBytes compares without dumping megabytes on failure.
func requireSameBytes(t testing.TB, want, got []byte, what string, args ...any) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	msg := fmt.Sprintf(what, args...)
	if len(want) != len(got) {
		t.Fatalf("%s: length %d, want %d", msg, len(got), len(want))
	}
	bad, first := 0, -1
	for i := range want {
		if want[i] != got[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	t.Fatalf("%s: %d of %d bytes differ, first at byte %d: got %#x want %#x", msg, bad, len(want), first, got[first], want[first])
}

// newRNG is a generator seeded from the test case and rank, so every run
// of a case sees the same data.
func newRNG(seed uint64, rank int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(rank)+1))
}

// seedOf hashes a case name into a seed.
func seedOf(name string) uint64 {
	h := uint64(1469598103934665603)
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// exactPreMul is the PreMulSum scalar of the exact tests: halving small
// integers is exact in every float type.
const exactPreMul = 0.5

// exactInput returns n elements of dt whose reduction under op is exact in
// any order, so any correct algorithm gives the reference's very bits:
// integers and bools are random over their range (wrapping arithmetic and
// max/min are associative); floats are small integers for sums, powers of
// two for products, and a set with ±0 and ±Inf for max/min.
func exactInput(rng *rand.Rand, dt reduce.DType, op reduce.Op, n int) []byte {
	es := dt.Size()
	buf := make([]byte, n*es)
	switch {
	case dt == reduce.Bool:
		for i := range buf {
			buf[i] = byte(rng.IntN(3)) // 2 checks that non-zero means true
		}
	case !dt.IsFloat():
		fillRandom(rng, buf)
	default:
		var set []float64
		switch op {
		case reduce.Prod:
			set = []float64{-2, -1, -0.5, 0, 0.5, 1, 2}
		case reduce.Max, reduce.Min:
			set = []float64{math.Inf(-1), -3.5, -1, math.Copysign(0, -1), 0, 0.25, 2, 7, math.Inf(1)}
		default:
			set = []float64{-8, -7, -5, -3, -2, -1, 0, 1, 2, 3, 4, 6, 8}
		}
		// Encode the set once, then pick encoded elements at random.
		enc := make([]byte, len(set)*es)
		for i, x := range set {
			putFloat(dt, enc[i*es:], x)
		}
		var bits uint64
		for i := range n {
			if i%8 == 0 {
				bits = rng.Uint64()
			}
			k := int(bits&0xff) % len(set)
			bits >>= 8
			copy(buf[i*es:(i+1)*es], enc[k*es:])
		}
	}
	return buf
}

// fillRandom fills buf with random bytes, eight at a time.
func fillRandom(rng *rand.Rand, buf []byte) {
	i := 0
	for ; i+8 <= len(buf); i += 8 {
		binary.NativeEndian.PutUint64(buf[i:], rng.Uint64())
	}
	for ; i < len(buf); i++ {
		buf[i] = byte(rng.Uint32())
	}
}

// randomFloats returns n elements of float dtype dt uniform in [-1, 1)
// (near 1 for Prod), where the order of reduction changes the rounding.
func randomFloats(rng *rand.Rand, dt reduce.DType, op reduce.Op, n int) []byte {
	buf := make([]byte, n*dt.Size())
	for i := range n {
		x := 2*rng.Float64() - 1
		if op == reduce.Prod {
			x = 1 + x/8
		}
		putFloat(dt, buf[i*dt.Size():], x)
	}
	return buf
}

// putFloat writes x as one element of float dtype dt (rounded to nearest).
func putFloat(dt reduce.DType, b []byte, x float64) {
	switch dt {
	case reduce.Float64:
		binary.NativeEndian.PutUint64(b, math.Float64bits(x))
	case reduce.Float32:
		binary.NativeEndian.PutUint32(b, math.Float32bits(float32(x)))
	case reduce.Float16, reduce.BFloat16:
		var f [4]byte
		binary.NativeEndian.PutUint32(f[:], math.Float32bits(float32(x)))
		if dt == reduce.Float16 {
			reduce.Float32ToFloat16(b[:2], f[:])
		} else {
			reduce.Float32ToBFloat16(b[:2], f[:])
		}
	}
}

// floats decodes a buffer of float dtype dt.
func floats(dt reduce.DType, b []byte) []float64 {
	es := dt.Size()
	out := make([]float64, len(b)/es)
	for i := range out {
		e := b[i*es:]
		switch dt {
		case reduce.Float64:
			out[i] = math.Float64frombits(binary.NativeEndian.Uint64(e))
		case reduce.Float32:
			out[i] = float64(math.Float32frombits(binary.NativeEndian.Uint32(e)))
		case reduce.Float16, reduce.BFloat16:
			var f [4]byte
			if dt == reduce.Float16 {
				reduce.Float16ToFloat32(f[:], e[:2])
			} else {
				reduce.BFloat16ToFloat32(f[:], e[:2])
			}
			out[i] = float64(math.Float32frombits(binary.NativeEndian.Uint32(f[:])))
		}
	}
	return out
}

// unitRoundoff is half the spacing of dt's floats at 1.
func unitRoundoff(dt reduce.DType) float64 {
	switch dt {
	case reduce.Float16:
		return 0x1p-11
	case reduce.BFloat16:
		return 0x1p-8
	case reduce.Float32:
		return 0x1p-24
	default:
		return 0x1p-53
	}
}

// reference reduces inputs in rank order, one rank at a time, with the
// library's kernels: scale each input for PreMulSum, fold with Reduce,
// divide once for Avg. It shares no code with the algorithms.
func reference(dt reduce.DType, op reduce.Op, preMul float64, inputs [][]byte) []byte {
	prep := func(in []byte) []byte {
		out := append([]byte(nil), in...)
		if op == reduce.PreMulSum {
			reduce.Scale(dt, out, in, preMul)
		}
		return out
	}
	acc := prep(inputs[0])
	for _, in := range inputs[1:] {
		reduce.Reduce(dt, op, acc, prep(in))
	}
	if op == reduce.Avg {
		reduce.DivideBy(dt, acc, len(inputs))
	}
	return acc
}

// floatReference reduces float inputs in float64, with the error bound of
// reducing them in any order in dt: each of the p-1 combinations, the
// pre-multiplications and the division may round once.
func floatReference(dt reduce.DType, op reduce.Op, preMul float64, inputs [][]byte) (want, tol []float64) {
	p := len(inputs)
	vals := make([][]float64, p)
	for r, in := range inputs {
		vals[r] = floats(dt, in)
	}
	n := len(vals[0])
	want, tol = make([]float64, n), make([]float64, n)
	u := unitRoundoff(dt)
	for i := range n {
		acc, mag := vals[0][i], 0.0
		if op == reduce.PreMulSum {
			acc *= preMul
		}
		mag = math.Abs(acc)
		for r := 1; r < p; r++ {
			x := vals[r][i]
			if op == reduce.PreMulSum {
				x *= preMul
			}
			if op == reduce.Prod {
				acc *= x
			} else {
				acc += x
			}
			mag += math.Abs(x)
		}
		if op == reduce.Prod {
			mag = math.Abs(acc)
		}
		if op == reduce.Avg {
			acc /= float64(p)
			mag /= float64(p)
		}
		want[i] = acc
		tol[i] = 2*float64(p+1)*u*mag + 1e-300
	}
	return want, tol
}

// validOps are the ops that apply to dt.
func validOps(dt reduce.DType) []reduce.Op {
	var ops []reduce.Op
	for _, op := range reduce.AllOps {
		if reduce.Check(dt, op) == nil {
			ops = append(ops, op)
		}
	}
	return ops
}

// invalidPairs are the (dtype, op) pairs reduce.Check rejects.
func invalidPairs() [][2]int32 {
	var out [][2]int32
	for _, dt := range reduce.AllDTypes {
		for _, op := range reduce.AllOps {
			if reduce.Check(dt, op) != nil {
				out = append(out, [2]int32{int32(dt), int32(op)})
			}
		}
	}
	return out
}

// testDTypes are the dtypes of the reduction matrices: all of them, or
// under the race detector (which looks for unsynchronized memory access,
// the same for every dtype) one integer, one 16-bit float and bool.
func testDTypes() []reduce.DType {
	if raceEnabled {
		return []reduce.DType{reduce.Int32, reduce.BFloat16, reduce.Bool}
	}
	return reduce.AllDTypes
}

// sizeClasses are one dtype per element size, for the collectives that move
// bytes without looking at them (the dtype only sets the sizes); under the
// race detector the smallest and the largest.
func sizeClasses() []reduce.DType {
	if raceEnabled {
		return []reduce.DType{reduce.Uint8, reduce.Float64}
	}
	return []reduce.DType{reduce.Uint8, reduce.Float16, reduce.Float32, reduce.Float64}
}

// bigCaseFor keeps the largest count affordable for a reduction: each
// dtype runs it once per algorithm (variant), with an op and a world size
// in {2, 3, 4} that rotate with the dtype and variant, plus float32 Sum at
// world 8. Under the race detector only bfloat16 runs it.
func bigCaseFor(dt reduce.DType, op reduce.Op, p int, variant int) bool {
	if raceEnabled && dt != reduce.BFloat16 {
		return false
	}
	if p == 8 {
		return dt == reduce.Float32 && op == reduce.Sum
	}
	ops := validOps(dt)
	k := int(dt) + variant
	return p == []int{2, 3, 4}[k%3] && op == ops[k%len(ops)]
}

// bigMoveFor is bigCaseFor for the collectives that only move bytes.
func bigMoveFor(dt reduce.DType, p int, variant int) bool {
	if raceEnabled && dt != reduce.Uint8 {
		return false
	}
	if p == 8 {
		return dt == reduce.Float32
	}
	return p == []int{2, 3, 4}[(int(dt)+variant)%3]
}

// algoName labels subtests; Auto has an empty name.
func algoName(a collectives.Algorithm) string {
	if a == collectives.Auto {
		return "auto"
	}
	return string(a)
}
