package hier_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// opTimeout bounds every collective call of a test.
const opTimeout = 20 * time.Second

// testPreMul is PreMulSum's factor: exact on the small integers of input.
const testPreMul = 0.75

// layouts are the emulated hosts of the tests, as the host of every rank:
// even and uneven hosts, hosts whose ranks interleave in rank order, hosts
// of one rank (no arena), one host, and no host shared.
// With messages, the ranks of a host run its phases as messages
// (MessageHost) rather than in an arena.
var layouts = []testLayout{
	{"2+2", []int{0, 0, 1, 1}, false},
	{"3+1", []int{0, 0, 0, 1}, false},
	{"1+1+2", []int{0, 1, 2, 2}, false},
	{"2+2 interleaved", []int{0, 1, 0, 1}, false},
	{"1+3 interleaved", []int{1, 0, 1, 1}, false},
	{"2+1+3", []int{0, 0, 1, 2, 2, 2}, false},
	{"one host", []int{0, 0, 0}, false},
	{"alone", []int{0, 1, 2}, false},
	{"2+2 messages", []int{0, 0, 1, 1}, true},
	{"2+2 interleaved messages", []int{0, 1, 0, 1}, true},
	{"2+1+3 messages", []int{0, 0, 1, 2, 2, 2}, true},
	{"fast pairs messages", []int{0, 1, 2, 3, 0, 1, 2, 3}, true},
}

type testLayout struct {
	name     string
	hostOf   []int
	messages bool
}

// testArenaConfig is small, so that few bytes already span several data
// halves and every protocol of the arena phases runs.
func testArenaConfig(dir string) arena.Config {
	return arena.Config{
		Dir:              dir,
		InlineBytes:      224,
		DataBytes:        16 << 10,
		SpinTime:         2 * time.Microsecond,
		YieldTime:        20 * time.Microsecond,
		LivenessInterval: 20 * time.Millisecond,
	}
}

// cluster is one communicator of emulated hosts in this process: inproc
// links between all ranks and a real arena (in /dev/shm when there is
// one) per host of two or more ranks.
type cluster struct {
	comms []*hier.Comm
	tag   transport.Tag
}

// newCluster builds the cluster whose rank r sits on host hostOf[r] and
// closes it when the test ends.
func newCluster(t testing.TB, hostOf []int) *cluster {
	t.Helper()
	return newLayoutCluster(t, testLayout{hostOf: hostOf})
}

// newLayoutCluster is newCluster of l, whose hosts run their phases as
// messages when l.messages.
func newLayoutCluster(t testing.TB, l testLayout) *cluster {
	t.Helper()
	hostOf := l.hostOf
	p := len(hostOf)
	layout := hier.Layout{Hosts: make([][]int, slices.Max(hostOf)+1)}
	for r, h := range hostOf {
		layout.Hosts[h] = append(layout.Hosts[h], r)
	}
	dir := shmDir(t)
	eps := inproc.NewGroup(p)
	arenas := make([]*arena.Arena, p)
	errs := make([]error, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for r, h := range hostOf {
		if len(layout.Hosts[h]) > 1 && !l.messages {
			wg.Go(func() {
				arenas[r], errs[r] = arena.Connect(ctx, r, layout.Hosts[h], t.Name(), testArenaConfig(dir))
			})
		}
	}
	wg.Wait()
	t.Cleanup(func() {
		for r := range p {
			if arenas[r] != nil {
				require.NoError(t, arenas[r].Close())
			}
			_ = eps[r].Close()
		}
	})
	c := &cluster{comms: make([]*hier.Comm, p)}
	for r := range p {
		require.NoError(t, errs[r], "arena of rank %d", r)
		var err error
		host := hier.ArenaHost(arenas[r])
		if mine := layout.Hosts[hostOf[r]]; l.messages && len(mine) > 1 {
			host, err = hier.MessageHost(eps[r], mine)
			require.NoError(t, err, "rank %d", r)
		}
		c.comms[r], err = hier.New(eps[r], host, layout)
		require.NoError(t, err, "rank %d", r)
	}
	return c
}

// shmDir is a fresh directory on /dev/shm when there is one.
func shmDir(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "hccl-go-hier-test-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

// run calls fn on every rank at once under a new tag and requires every
// rank to succeed within opTimeout.
func (c *cluster) run(t testing.TB, fn func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error) {
	t.Helper()
	for r, err := range c.runErr(t, fn) {
		require.NoError(t, err, "rank %d", r)
	}
}

func (c *cluster) runErr(t testing.TB, fn func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error) []error {
	t.Helper()
	c.tag++
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	errs := make([]error, len(c.comms))
	var wg sync.WaitGroup
	for r, comm := range c.comms {
		wg.Go(func() { errs[r] = fn(ctx, r, comm, c.tag) })
	}
	wg.Wait()
	return errs
}

// input is rank r's n elements of dt for a case: small integers for
// floats (products of -2..2 for Prod), so that every order of reduction
// gives the same bits and the rank-order reference applies to the
// hierarchical order; random bits for integers (their arithmetic wraps
// in any order alike); 0..2 for bools.
func input(dt reduce.DType, op reduce.Op, n, r int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(r)+1))
	es := dt.Size()
	buf := make([]byte, n*es)
	for i := range n {
		b := buf[i*es : (i+1)*es]
		x := float64(rng.IntN(7) - 3)
		if op == reduce.Prod {
			x = float64(rng.IntN(5) - 2)
		}
		switch dt {
		case reduce.Bool:
			b[0] = byte(rng.IntN(3))
		case reduce.Float32, reduce.Float64, reduce.Float16, reduce.BFloat16:
			putFloat(dt, b, x)
		default:
			var w [8]byte
			binary.NativeEndian.PutUint64(w[:], rng.Uint64())
			copy(b, w[:])
		}
	}
	return buf
}

// randomFloats is rank r's n float elements of dt with random mantissas,
// whose sums round differently in different orders.
func randomFloats(dt reduce.DType, n, r int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(r)+1))
	buf := make([]byte, n*dt.Size())
	for i := range n {
		putFloat(dt, buf[i*dt.Size():], 2*rng.Float64()-1)
	}
	return buf
}

func putFloat(dt reduce.DType, b []byte, x float64) {
	var f [4]byte
	binary.NativeEndian.PutUint32(f[:], math.Float32bits(float32(x)))
	switch dt {
	case reduce.Float32:
		copy(b, f[:])
	case reduce.Float64:
		binary.NativeEndian.PutUint64(b, math.Float64bits(x))
	case reduce.Float16:
		reduce.Float32ToFloat16(b, f[:])
	case reduce.BFloat16:
		reduce.Float32ToBFloat16(b, f[:])
	}
}

// reference reduces the inputs in rank order (scaled for PreMulSum), then
// divides for Avg.
func reference(dt reduce.DType, op reduce.Op, inputs [][]byte) []byte {
	scaled := func(in []byte) []byte {
		out := slices.Clone(in)
		if op == reduce.PreMulSum {
			reduce.Scale(dt, out, in, testPreMul)
		}
		return out
	}
	acc := scaled(inputs[0])
	for _, in := range inputs[1:] {
		reduce.Reduce(dt, op, acc, scaled(in))
	}
	if op == reduce.Avg {
		reduce.DivideBy(dt, acc, len(inputs))
	}
	return acc
}

// validPairs lists the (dtype, op) pairs that reduce.Check accepts: all of
// them, or under the race detector every op on a few dtypes.
func validPairs() [][2]int32 {
	var pairs [][2]int32
	for _, dt := range reduce.AllDTypes {
		if raceEnabled && dt != reduce.Float32 && dt != reduce.BFloat16 && dt != reduce.Int32 && dt != reduce.Bool {
			continue
		}
		for _, op := range reduce.AllOps {
			if reduce.Check(dt, op) == nil {
				pairs = append(pairs, [2]int32{int32(dt), int32(op)})
			}
		}
	}
	return pairs
}

// elemCounts are the buffer sizes in elements: empty, one element (fewer
// than ranks), counts that no host size divides, and sizes spanning many
// arena epochs.
func elemCounts(big bool) []int {
	if big {
		return []int{0, 1, 7, 1001, 5003}
	}
	return []int{0, 1, 7, 1001}
}

// requireSameBytes compares without dumping kilobytes on failure.
func requireSameBytes(t testing.TB, want, got []byte, what string, args ...any) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	msg := fmt.Sprintf(what, args...)
	if len(want) != len(got) {
		t.Fatalf("%s: length %d, want %d", msg, len(got), len(want))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: byte %d of %d is %#x, want %#x", msg, i, len(want), got[i], want[i])
		}
	}
}
