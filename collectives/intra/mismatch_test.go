package intra

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// mcall is one rank's collective call in a mismatch test: which one and
// with what arguments. n is the per-rank size in bytes (allreduce/reduce
// send, broadcast recv, allgather send, reducescatter recv, every
// alltoallv block).
type mcall struct {
	op       string
	n        int
	dt       reduce.DType
	redOp    reduce.Op
	root     int
	seqDelta uint64 // added to the test's seq
}

// sentinel fills recv before a call, so that any byte written shows.
const sentinel = 0xAB

// fill is what rank r sends: a byte unlike every other rank's and the
// sentinel, so a peer's data in recv is recognisable.
func fill(r int) byte { return byte(0x10 * (r + 1)) }

// do runs c on rank r and returns its recv buffer.
func (c mcall) do(ctx context.Context, a *arena.Arena, r int, seq uint64) ([]byte, error) {
	p, seq := a.Size(), seq+c.seqDelta
	buf := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	send := buf(c.n, fill(r))
	switch c.op {
	case "allreduce":
		recv := buf(c.n, sentinel)
		return recv, AllReduce(ctx, a, seq, send, recv, c.dt, c.redOp, 0)
	case "reduce":
		recv := buf(c.n, sentinel)
		return recv, Reduce(ctx, a, seq, send, recv, c.dt, c.redOp, 0, c.root)
	case "broadcast":
		recv := buf(c.n, sentinel)
		return recv, Broadcast(ctx, a, seq, send, recv, c.root)
	case "allgather":
		recv := buf(p*c.n, sentinel)
		return recv, AllGather(ctx, a, seq, send, recv)
	case "reducescatter":
		recv := buf(c.n, sentinel)
		return recv, ReduceScatter(ctx, a, seq, buf(p*c.n, fill(r)), recv, c.dt, c.redOp, 0)
	case "alltoallv":
		counts, displs := make([]int, p), make([]int, p)
		for j := range p {
			counts[j], displs[j] = c.n, j*c.n
		}
		recv := buf(p*c.n, sentinel)
		return recv, AllToAllV(ctx, a, seq, buf(p*c.n, fill(r)), counts, displs, recv, counts, displs)
	case "barrier":
		return nil, Barrier(ctx, a, seq)
	}
	return nil, fmt.Errorf("unknown op %q", c.op)
}

// mismatchCase: every rank makes call base, except rank odd, which makes
// call odd; every rank must fail with ErrMismatch and an error containing
// want (with %d replaced by the rank's own size), none may see a peer's
// data, and the arena must stay usable.
type mismatchCase struct {
	name      string
	base, odd mcall
	want      string
}

// sizeCases: the odd rank passes a smaller or bigger size than the others,
// across the protocol boundaries (inline, data halves, pipeline, empty).
func sizeCases(op string, dt reduce.DType, redOp reduce.Op, inlineBytes int) []mismatchCase {
	inline := inlineBytes / 8 * 8
	pairs := [][2]int{
		{16, 32},              // 4 vs 8 float32
		{16, 8},               // both in the flag's cache line
		{inline, inline + 64}, // inline slot vs data halves
		{64, 2 << 20},         // inline vs the all_reduce pipeline
		{3000, 5000},          // one epoch through the halves vs two
		{0, 8},                // empty vs not
		{8, 0},
	}
	var cs []mismatchCase
	for _, pr := range pairs {
		base := mcall{op: op, n: pr[0], dt: dt, redOp: redOp}
		odd := base
		odd.n = pr[1]
		cs = append(cs, mismatchCase{fmt.Sprintf("%s %d vs %d bytes", op, pr[0], pr[1]), base, odd, "this rank %d"})
	}
	return cs
}

func mismatchCases(inlineBytes int) []mismatchCase {
	var cs []mismatchCase
	for _, op := range []string{"allreduce", "reduce", "broadcast", "allgather", "reducescatter", "alltoallv"} {
		cs = append(cs, sizeCases(op, reduce.Float32, reduce.Sum, inlineBytes)...)
	}
	f32 := func(op string, n int) mcall { return mcall{op: op, n: n, dt: reduce.Float32, redOp: reduce.Sum} }
	with := func(c mcall, edit func(*mcall)) mcall { edit(&c); return c }
	cs = append(cs,
		mismatchCase{"allreduce dtype", f32("allreduce", 16),
			with(f32("allreduce", 16), func(c *mcall) { c.dt = reduce.Int32 }), "has dtype"},
		mismatchCase{"allreduce dtype of other size", f32("allreduce", 4096),
			with(f32("allreduce", 4096), func(c *mcall) { c.dt = reduce.Float64 }), "has dtype"},
		mismatchCase{"allreduce op", f32("allreduce", 16),
			with(f32("allreduce", 16), func(c *mcall) { c.redOp = reduce.Max }), "reduces with"},
		mismatchCase{"reducescatter op", f32("reducescatter", 4096),
			with(f32("reducescatter", 4096), func(c *mcall) { c.redOp = reduce.Min }), "reduces with"},
		mismatchCase{"reduce root", f32("reduce", 16),
			with(f32("reduce", 16), func(c *mcall) { c.root = 1 }), "has root"},
		mismatchCase{"broadcast root", f32("broadcast", 16),
			with(f32("broadcast", 16), func(c *mcall) { c.root = 1 }), "has root"},
		mismatchCase{"allreduce vs barrier", f32("allreduce", 8), f32("barrier", 0), "called"},
		mismatchCase{"allgather vs broadcast", f32("allgather", 5000), f32("broadcast", 5000), "called"},
		mismatchCase{"reducescatter vs alltoallv", f32("reducescatter", 64), f32("alltoallv", 64), "called"},
		mismatchCase{"skipped op", f32("allreduce", 16),
			with(f32("allreduce", 16), func(c *mcall) { c.seqDelta = 1 }), "at seq"},
	)
	return cs
}

func TestMismatchFailsEveryRank(t *testing.T) {
	cfg := testArenaConfig("")
	for _, p := range []int{2, 3, 4} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			w := newWorld(t, p, cfg)
			odd := p - 1
			for _, c := range mismatchCases(w.arenas[0].InlineBytes()) {
				t.Run(c.name, func(t *testing.T) {
					recvs := make([][]byte, p)
					errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
						call := c.base
						if r == odd {
							call = c.odd
						}
						var err error
						recvs[r], err = call.do(ctx, a, r, seq)
						return err
					})
					for r, err := range errs {
						require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
						require.ErrorIs(t, err, collectives.ErrInvalidArgument, "rank %d", r)
						call := c.base
						if r == odd {
							call = c.odd
						}
						msg := err.Error()
						assert.Contains(t, msg, fmt.Sprintf("%s rank %d seq %d", call.op, r, w.seq+call.seqDelta))
						switch {
						case c.want == "this rank %d" && call.op == "alltoallv":
							// Blocks are per pair: the counts check names one.
							assert.Contains(t, msg, "which expects", "rank %d", r)
						case c.want == "this rank %d":
							assert.Contains(t, msg, fmt.Sprintf(c.want, call.n), "rank %d", r)
						default:
							assert.Contains(t, msg, c.want, "rank %d", r)
						}
						requireNoPeerData(t, recvs[r], r, "rank %d", r)
					}
					// The ranks are still in step: a correct op works.
					requireUsable(t, w)
				})
			}
		})
	}
}

// requireNoPeerData checks that recv holds only the sentinel and this
// rank's own data (which AllGather, Broadcast's root and AllToAllV copy
// before they meet their peers).
func requireNoPeerData(t *testing.T, recv []byte, r int, msg string, args ...any) {
	t.Helper()
	for i, b := range recv {
		if b != sentinel && b != fill(r) {
			t.Fatalf("%s: recv[%d] = %#x: data from a peer after a mismatch", fmt.Sprintf(msg, args...), i, b)
		}
	}
}

// requireUsable runs a correct all_reduce through the inline slot and one
// through the pipeline (at testTuning's thresholds), and checks their
// results.
func requireUsable(t *testing.T, w *world) {
	t.Helper()
	p := len(w.arenas)
	for _, n := range []int{2, 4000} { // float32 elements
		outs := make([][]byte, p)
		w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
			outs[r] = make([]byte, 4*n)
			return allReduce(ctx, a, nil, seq, float32s(n, float32(r+1)), outs[r], reduce.Float32, reduce.Sum, 0, testTuning())
		})
		want := float32s(n, float32(p*(p+1)/2))
		for r := range p {
			requireSameBytes(t, want, outs[r], "rank %d, %d elements after a mismatch", r, n)
		}
	}
}

// float32s is n float32 elements of value v.
func float32s(n int, v float32) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestMismatchMessage(t *testing.T) {
	w := newWorld(t, 2, testArenaConfig(""))
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		n := 16 * (r + 1) // 4 float32 on rank 0, 8 on rank 1
		buf := make([]byte, n)
		return AllReduce(ctx, a, 7, buf, buf, reduce.Float32, reduce.Sum, 0)
	})
	assert.EqualError(t, errs[0], "allreduce rank 0 seq 7: invalid argument: ranks called different collectives: rank 1 has 32 bytes, this rank 16")
	assert.EqualError(t, errs[1], "allreduce rank 1 seq 7: invalid argument: ranks called different collectives: rank 0 has 16 bytes, this rank 32")
}

func TestStampRoundTrip(t *testing.T) {
	for _, s := range []opStamp{
		{kind: kindAllReduce, seq: 1<<63 + 5, bytes: 1 << 40, dt: reduce.BFloat16, op: reduce.PreMulSum, root: noRoot},
		{kind: kindBroadcast, seq: 0, bytes: 0, root: 0},
		{kind: kindReduce, seq: 9, bytes: 8, dt: reduce.Float64, op: reduce.Max, root: 1000},
	} {
		assert.Equal(t, s, decodeStamp(s.encode()))
	}
}
