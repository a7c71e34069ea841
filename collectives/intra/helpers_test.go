package intra

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// worlds are the arena sizes of the test matrix.
var worlds = []int{1, 2, 3, 4, 8}

// opTimeout bounds every collective call of a test.
const opTimeout = 20 * time.Second

// testArenaConfig is small, so that few bytes already span several data
// halves and every protocol runs.
func testArenaConfig(dir string) arena.Config {
	return arena.Config{
		Dir:              dir,
		InlineBytes:      224, // 256-byte slots (flag and stamp: 32 bytes)
		DataBytes:        16 << 10,
		SpinTime:         2 * time.Microsecond,
		YieldTime:        20 * time.Microsecond,
		LivenessInterval: 20 * time.Millisecond,
	}
}

// testTuning switches protocols at small sizes to match testArenaConfig.
func testTuning() tuning {
	return tuning{oneShotMax: 12 << 10, oneShotChunk: 2 << 10, sliceBytes: 1 << 10, copyBytes: 3 << 10}
}

// world is p ranks' arenas in one process.
type world struct {
	arenas []*arena.Arena
	seq    uint64
}

// newWorld connects p arenas (global ranks 0..p-1) on a real tmpfs and
// closes them when the test ends; it checks that no segment file is left.
func newWorld(t testing.TB, p int, cfg arena.Config) *world {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = shmDir(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	local := make([]int, p)
	for i := range local {
		local[i] = i
	}
	job := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	w := &world{arenas: make([]*arena.Arena, p)}
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r := range p {
		wg.Go(func() { w.arenas[r], errs[r] = arena.Connect(ctx, r, local, job, cfg) })
	}
	wg.Wait()
	for r := range p {
		require.NoError(t, errs[r], "connect rank %d", r)
	}
	t.Cleanup(func() {
		for _, a := range w.arenas {
			require.NoError(t, a.Close())
		}
		entries, err := os.ReadDir(cfg.Dir)
		require.NoError(t, err)
		require.Empty(t, entries, "segment files left behind")
	})
	return w
}

// shmDir is a fresh directory on /dev/shm when there is one.
func shmDir(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "hccl-go-intra-test-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

// rankFunc is one rank's part of a collective call.
type rankFunc func(ctx context.Context, a *arena.Arena, rank int, seq uint64) error

// run calls fn on every rank concurrently and returns their errors; it
// fails the test if a rank does not return.
func (w *world) run(t testing.TB, fn rankFunc) []error {
	t.Helper()
	w.seq++
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	errs := make([]error, len(w.arenas))
	var wg sync.WaitGroup
	for r, a := range w.arenas {
		wg.Go(func() { errs[r] = fn(ctx, a, r, w.seq) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(opTimeout + 5*time.Second):
		t.Fatalf("ranks did not return within their deadline")
	}
	return errs
}

// runOK is run requiring every rank to succeed.
func (w *world) runOK(t testing.TB, fn rankFunc) {
	t.Helper()
	for r, err := range w.run(t, fn) {
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

// input returns rank's n elements of dt for a case: random bits for
// integers and bools (bools 0..2, non-zero meaning true), random finite
// values for floats (near 1 for Prod, so products stay finite), where the
// order of reduction changes the rounding: results must match the
// reference, which reduces in rank order, bit for bit.
func input(dt reduce.DType, op reduce.Op, n, rank int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(rank)+1))
	es := dt.Size()
	buf := make([]byte, n*es)
	for i := range n {
		b := buf[i*es : (i+1)*es]
		x := 2*rng.Float64() - 1
		if op == reduce.Prod {
			x = 1 + x/8
		}
		switch dt {
		case reduce.Bool:
			b[0] = byte(rng.IntN(3))
		case reduce.Float32:
			binary.NativeEndian.PutUint32(b, math.Float32bits(float32(x)))
		case reduce.Float64:
			binary.NativeEndian.PutUint64(b, math.Float64bits(x))
		case reduce.Float16, reduce.BFloat16:
			var f [4]byte
			binary.NativeEndian.PutUint32(f[:], math.Float32bits(float32(x)))
			if dt == reduce.Float16 {
				reduce.Float32ToFloat16(b, f[:])
			} else {
				reduce.Float32ToBFloat16(b, f[:])
			}
		default:
			var r [8]byte
			binary.NativeEndian.PutUint64(r[:], rng.Uint64())
			copy(b, r[:])
		}
	}
	return buf
}

// refReduce is the sequential reference: inputs (scaled for PreMulSum)
// reduced in rank order, then divided for Avg.
func refReduce(dt reduce.DType, op reduce.Op, preMul float64, inputs [][]byte) []byte {
	p := len(inputs)
	scaled := func(j int) []byte {
		if op != reduce.PreMulSum {
			return inputs[j]
		}
		s := make([]byte, len(inputs[j]))
		reduce.Scale(dt, s, inputs[j], preMul)
		return s
	}
	out := append([]byte(nil), scaled(0)...)
	if p == 1 {
		return out
	}
	for j := 1; j < p; j++ {
		reduce.Reduce(dt, op, out, scaled(j))
	}
	if op == reduce.Avg {
		reduce.DivideBy(dt, out, p)
	}
	return out
}

// validPairs lists every (dtype, op) pair that reduce.Check accepts.
func validPairs() [][2]int32 {
	var pairs [][2]int32
	for _, dt := range reduce.AllDTypes {
		for _, op := range reduce.AllOps {
			if reduce.Check(dt, op) == nil {
				pairs = append(pairs, [2]int32{int32(dt), int32(op)})
			}
		}
	}
	return pairs
}

// counts returns the element counts tested for p ranks and element size es:
// empty, tiny, not divisible by p, inline, one-shot and pipelined sizes,
// and one more than fits in the data area.
func counts(p, es int, cfg arena.Config) []int {
	c := []int{0, 1, 7, 1000, cfg.DataBytes/es + 3}
	if p > 2 {
		c = append(c, p-1)
	}
	return c
}

// matrixPairs is the (dtype, op) pairs tested at p ranks: all valid pairs,
// or under the race detector (about 20x slower) all of them at p = 2 and 3
// and every op on a few dtypes elsewhere.
func matrixPairs(p int) [][2]int32 {
	all := validPairs()
	if !raceEnabled || p == 2 || p == 3 {
		return all
	}
	var some [][2]int32
	for _, pr := range all {
		switch reduce.DType(pr[0]) {
		case reduce.Float32, reduce.BFloat16, reduce.Int64, reduce.Bool:
			some = append(some, pr)
		}
	}
	return some
}

// errInvalid is the sentinel of usage errors.
func errInvalid() error { return collectives.ErrInvalidArgument }

// reductionRunner runs one rank's reduction of send into recv.
type reductionRunner func(ctx context.Context, a *arena.Arena, r int, seq uint64, send, recv []byte) error

// requireReferenceReduction runs one reduction of n elements on every
// rank of w through run, in place or not, and requires every rank's recv
// to equal the sequential reference bit for bit; what names the case.
func requireReferenceReduction(t *testing.T, w *world, dt reduce.DType, op reduce.Op, n int, seed uint64, inPlace bool, run reductionRunner, what string) {
	t.Helper()
	p := len(w.arenas)
	inputs := make([][]byte, p)
	for r := range p {
		inputs[r] = input(dt, op, n, r, seed)
	}
	want := refReduce(dt, op, testPreMul, inputs)
	outs := make([][]byte, p)
	w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		send := append([]byte(nil), inputs[r]...)
		recv := send
		if !inPlace {
			recv = make([]byte, len(send))
		}
		outs[r] = recv
		return run(ctx, a, r, seq, send, recv)
	})
	for r := range p {
		requireSameBytes(t, want, outs[r], "%s %s %s n=%d inPlace=%v rank %d", what, dt, op, n, inPlace, r)
	}
}
