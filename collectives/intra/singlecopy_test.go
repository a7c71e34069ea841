package intra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/cma"
)

// singleCopyTuning is testTuning with single-copy from 4 KiB (below the
// one-shot limit, 12 KiB at p = 2, so that a refusal falls back to both
// one-shot and the pipeline) to 64 KiB at p = 2, in slices of 1 KiB, so
// that a few KiB already take many rounds.
func singleCopyTuning() tuning {
	t := testTuning()
	t.singleCopyMin, t.singleCopyMax, t.singleCopySlice = 4<<10, 64<<10, 1<<10
	return t
}

// singleCopies makes one state per rank, enabled.
func singleCopies(p int) []*SingleCopy {
	scs := make([]*SingleCopy, p)
	for r := range scs {
		scs[r] = NewSingleCopy(true)
	}
	return scs
}

func requireCMA(t *testing.T) {
	t.Helper()
	if !cma.Supported() {
		t.Skip("process_vm_readv is not supported on this platform")
	}
}

// singleCopyCounts are element counts of es bytes around the single-copy
// limits of tu at p ranks: below, at and above the minimum, counts that
// leave a partial last window (not divisible by p), and above the maximum.
func singleCopyCounts(p, es int, tu tuning) []int {
	lo, hi := tu.singleCopyMin/es, tu.singleCopyLimit(p)/es
	return []int{lo, lo + 1, lo + 2*p + 1, (lo+hi)/2 + p - 1, hi, hi + 1}
}

// TestSingleCopyAllReduceMatrix checks every (dtype, op) pair through the
// single-copy protocol, at p = 2, 3, 4 goroutine ranks (the kernel lets a
// process read its own memory), in place and out of place, bit for bit
// against the sequential reference.
func TestSingleCopyAllReduceMatrix(t *testing.T) {
	requireCMA(t)
	tu := singleCopyTuning()
	for _, p := range []int{2, 3, 4} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			w := newWorld(t, p, testArenaConfig(""))
			scs := singleCopies(p)
			pairs := matrixPairs(p)
			if raceEnabled && p > 2 {
				pairs = matrixPairs(4) // every op on a few dtypes
			}
			for _, pair := range pairs {
				dt, op := reduce.DType(pair[0]), reduce.Op(pair[1])
				ns := singleCopyCounts(p, dt.Size(), tu)
				if raceEnabled {
					ns = ns[1:4] // inside the single-copy range only
				}
				for _, n := range ns {
					for _, inPlace := range []bool{false, true} {
						verifyAllReduce(t, w, scs, dt, op, n, inPlace, tu)
					}
				}
			}
			for r, sc := range scs {
				assert.Equal(t, "on", sc.State(), "rank %d", r)
			}
		})
	}
}

// TestSingleCopyFallback: when one rank is unwilling or cannot read its
// peers, every rank falls back to the pipeline, gets the same bits, and
// keeps the answer for later calls.
func TestSingleCopyFallback(t *testing.T) {
	tu := singleCopyTuning()
	cases := []struct {
		name  string
		setup func(scs []*SingleCopy)
	}{
		{"disabled on the last rank", func(scs []*SingleCopy) { scs[len(scs)-1] = NewSingleCopy(false) }},
		{"disabled everywhere", func(scs []*SingleCopy) {
			for r := range scs {
				scs[r] = NewSingleCopy(false)
			}
		}},
		{"refused on rank 0", func(scs []*SingleCopy) { scs[0].refuse = true }},
	}
	for _, p := range []int{2, 3} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("p%d/%s", p, c.name), func(t *testing.T) {
				w := newWorld(t, p, testArenaConfig(""))
				scs := singleCopies(p)
				c.setup(scs)
				for _, dt := range []reduce.DType{reduce.Float32, reduce.BFloat16} {
					for _, op := range []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum} {
						for _, n := range singleCopyCounts(p, dt.Size(), tu) {
							for _, inPlace := range []bool{false, true} {
								verifyAllReduce(t, w, scs, dt, op, n, inPlace, tu)
							}
						}
					}
				}
				for r, sc := range scs {
					assert.Contains(t, sc.State(), "off", "rank %d", r)
				}
			})
		}
	}
}

// TestSingleCopyMismatch: a rank that passes no single-copy state where
// its peers pass one fails the call like any mismatch, on every rank,
// without touching peer data, and the arena stays usable.
func TestSingleCopyMismatch(t *testing.T) {
	requireCMA(t)
	const p = 2
	tu := singleCopyTuning()
	w := newWorld(t, p, testArenaConfig(""))
	scs := singleCopies(p)
	n := tu.singleCopyMin / 4 * 2 // float32 elements
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		sc := scs[r]
		if r == 1 {
			sc = nil
		}
		buf := float32s(n, 1)
		return allReduce(ctx, a, sc, seq, buf, buf, reduce.Float32, reduce.Sum, 0, tu)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
		assert.Contains(t, err.Error(), "single-copy", "rank %d", r)
	}
	requireUsable(t, w)
	verifyAllReduce(t, w, scs, reduce.Float32, reduce.Sum, n, true, tu)
	assert.Equal(t, "on", scs[0].State())
}

// TestSingleCopyPeerNeverArrives: a rank waiting in the single-copy
// protocol for a peer that never comes ends with its context, naming the
// peer, and within the context's time.
func TestSingleCopyPeerNeverArrives(t *testing.T) {
	requireCMA(t)
	const p = 3
	tu := singleCopyTuning()
	w := newWorld(t, p, testArenaConfig(""))
	scs := singleCopies(p)
	// Agree first, so that the failing call runs the single-copy rounds.
	verifyAllReduce(t, w, scs, reduce.Float32, reduce.Sum, tu.singleCopyMin/4+1, false, tu)
	start := time.Now()
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		if r == 2 {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		buf := float32s(tu.singleCopyMin/4+1, 1)
		return allReduce(ctx, a, scs[r], seq, buf, buf, reduce.Float32, reduce.Sum, 0, tu)
	})
	assert.Less(t, time.Since(start), 2*time.Second)
	for r := range 2 {
		require.ErrorIs(t, errs[r], context.DeadlineExceeded, "rank %d", r)
		assert.Contains(t, errs[r].Error(), "peer rank 2", "rank %d", r)
	}
}

func TestPeerCopyError(t *testing.T) {
	err := peerCopyError(3, 1234, fmt.Errorf("process_vm_readv from pid 1234: %w", syscall.ESRCH))
	var pe *arena.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 3, pe.Rank)
	assert.Equal(t, 1234, pe.Pid)
	assert.ErrorIs(t, err, arena.ErrPeerGone)
	assert.Contains(t, err.Error(), "peer rank 3")

	err = peerCopyError(2, 99, syscall.EPERM)
	assert.ErrorIs(t, err, syscall.EPERM)
	assert.False(t, errors.As(err, &pe))
	assert.Contains(t, err.Error(), "peer rank 2 (pid 99)")
}

// Two processes: the helper plays rank 1 (helperSingleCopy), both check
// every result against the reference, so that the protocol runs between
// two address spaces as in production.
func TestSingleCopyTwoProcesses(t *testing.T) {
	requireCMA(t)
	ctx, a, cmd, _ := helperArena(t, "singlecopy", "sc", 30*time.Second, testArenaConfig)
	sc := NewSingleCopy(true)
	require.NoError(t, singleCopyChecks(ctx, a, sc))
	assert.Equal(t, "on", sc.State())
	require.NoError(t, cmd.Wait(), "helper")
}

// helperSingleCopy is rank 1 of TestSingleCopyTwoProcesses.
func helperSingleCopy(ctx context.Context, a *arena.Arena) error {
	sc := NewSingleCopy(true)
	if err := singleCopyChecks(ctx, a, sc); err != nil {
		return err
	}
	if sc.State() != "on" {
		return fmt.Errorf("single-copy %s", sc.State())
	}
	return nil
}

// singleCopyChecks runs a few all_reduces of both ranks' deterministic
// inputs and compares the results with the reference.
func singleCopyChecks(ctx context.Context, a *arena.Arena, sc *SingleCopy) error {
	tu := singleCopyTuning()
	seq := uint64(0)
	for _, c := range []struct {
		dt reduce.DType
		op reduce.Op
	}{{reduce.Float32, reduce.Sum}, {reduce.BFloat16, reduce.Avg}, {reduce.Float64, reduce.PreMulSum}, {reduce.Int32, reduce.Max}} {
		for _, n := range singleCopyCounts(2, c.dt.Size(), tu) {
			for _, inPlace := range []bool{false, true} {
				seq++
				inputs := [][]byte{input(c.dt, c.op, n, 0, seq), input(c.dt, c.op, n, 1, seq)}
				want := refReduce(c.dt, c.op, testPreMul, inputs)
				send := inputs[a.Index()]
				recv := send
				if !inPlace {
					recv = make([]byte, len(send))
				}
				if err := allReduce(ctx, a, sc, seq, send, recv, c.dt, c.op, testPreMul, tu); err != nil {
					return err
				}
				if !bytes.Equal(want, recv) {
					return fmt.Errorf("%s %s n=%d inPlace=%v: result differs from the reference", c.dt, c.op, n, inPlace)
				}
			}
		}
	}
	return nil
}

// TestPeerKilledMidSingleCopy kills rank 1's process while both run
// single-copy all_reduces: rank 0 fails soon with the peer-gone error
// naming rank 1, whether it was reading the peer's memory (ESRCH) or
// waiting for its post.
func TestPeerKilledMidSingleCopy(t *testing.T) {
	requireCMA(t)
	ctx, a, cmd, _ := helperArena(t, "spinsc", "sckill", 20*time.Second, smallDataArena)
	sc := NewSingleCopy(true)
	buf := make([]byte, spinSingleCopyBytes)
	require.NoError(t, AllReduceWith(ctx, a, sc, 1, buf, buf, reduce.Float32, reduce.Sum, 0))
	require.Equal(t, "on", sc.State())

	killMidOps(t, cmd, func(seq uint64) error {
		return AllReduceWith(ctx, a, sc, seq, buf, buf, reduce.Float32, reduce.Sum, 0)
	})
}

// spinSingleCopyBytes is the all_reduce size of the "spinsc" helper, in
// the default single-copy range.
const spinSingleCopyBytes = 1 << 20

// helperSpinSingleCopy runs single-copy all_reduces until killed.
func helperSpinSingleCopy(ctx context.Context, a *arena.Arena) error {
	return spinAllReduce(ctx, a, NewSingleCopy(true), spinSingleCopyBytes)
}

// TestSingleCopyFailedRankDoesNotLeakIntoPeers: rank 0 posts its "done
// reading" epoch and fails waiting for rank 1, which still has to read
// rank 0's recv; rank 0's caller then reuses that buffer. Rank 1 must not
// return those bytes as a success: it fails too.
func TestSingleCopyFailedRankDoesNotLeakIntoPeers(t *testing.T) {
	requireCMA(t)
	const p = 2
	tu := singleCopyTuning()
	w := newWorld(t, p, testArenaConfig(""))
	scs := singleCopies(p)
	n := tu.singleCopyMin/4 + 100 // float32 elements
	verifyAllReduce(t, w, scs, reduce.Float32, reduce.Sum, n, false, tu)

	rank0Failed := make(chan struct{})
	scs[1].beforeLastGather = func() { <-rank0Failed }
	defer func() { scs[1].beforeLastGather = nil }()
	recvs := [][]byte{make([]byte, 4*n), make([]byte, 4*n)}
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		timeout := time.Second
		if r == 0 {
			timeout = 100 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := allReduce(ctx, a, scs[r], seq, float32s(n, 1), recvs[r], reduce.Float32, reduce.Sum, 0, tu)
		if r == 0 {
			for i := range recvs[0] {
				recvs[0][i] = 0xee // the caller reuses its buffer
			}
			close(rank0Failed)
		}
		return err
	})
	require.ErrorIs(t, errs[0], context.DeadlineExceeded)
	require.Error(t, errs[1], "rank 1 read rank 0's reused buffer and returned success")
	assert.ErrorIs(t, errs[1], arena.ErrPeerFailed, "rank 1 stops with rank 0's failure")
}
