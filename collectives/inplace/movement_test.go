package inplace

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport/symm"
)

// regionsOf fills every rank's region with a pattern of its own and
// returns copies, so that tests can check which bytes changed.
func regionsOf(t *testing.T, ws []*symm.Window, salt int) [][]byte {
	t.Helper()
	before := make([][]byte, len(ws))
	for r, w := range ws {
		reg, err := w.Region(r)
		require.NoError(t, err)
		for i := range reg {
			reg[i] = byte(i*13 + r*101 + salt)
		}
		before[r] = slices.Clone(reg)
	}
	return before
}

// TestBroadcast: every rank's span equals the root's, every other byte is
// unchanged, for every root and sizes 0, 1 and odd.
func TestBroadcast(t *testing.T) {
	for p := 1; p <= 3; p++ {
		ws := windows(t, p, 64<<10)
		seq := uint64(0)
		for root := range p {
			for _, n := range []int{0, 1, 1031, 40000} {
				t.Run(fmt.Sprintf("p%d/root%d/%d", p, root, n), func(t *testing.T) {
					const off = 3
					before := regionsOf(t, ws, n+root)
					seq++
					errs := each(p, func(r int) error {
						return Broadcast(context.Background(), ws[r], 0, seq, off, n, root, 5*time.Second)
					})
					for r, err := range errs {
						require.NoError(t, err, "rank %d", r)
					}
					for r, w := range ws {
						reg, _ := w.Region(r)
						want := slices.Clone(before[r])
						copy(want[off:off+n], before[root][off:off+n])
						assert.True(t, slices.Equal(want, reg), "rank %d", r)
					}
				})
			}
		}
	}
}

// TestAllGather: every rank's output holds every rank's block in rank
// order, in place and out of place; nothing else changes.
func TestAllGather(t *testing.T) {
	for p := 1; p <= 3; p++ {
		ws := windows(t, p, 64<<10)
		seq := uint64(0)
		for _, n := range []int{0, 1, 1031, 12000} {
			for _, inPlace := range []bool{true, false} {
				t.Run(fmt.Sprintf("p%d/%d/inplace=%v", p, n, inPlace), func(t *testing.T) {
					sendOff, recvOff := 5, 5+n+7
					if inPlace {
						sendOff = 0 // ignored
					}
					before := regionsOf(t, ws, n)
					seq++
					errs := each(p, func(r int) error {
						return AllGather(context.Background(), ws[r], 1, seq, sendOff, recvOff, n, inPlace, 5*time.Second)
					})
					for r, err := range errs {
						require.NoError(t, err, "rank %d", r)
					}
					for r, w := range ws {
						reg, _ := w.Region(r)
						want := slices.Clone(before[r])
						for q := range p {
							from := sendOff
							if inPlace {
								from = recvOff + q*n
							}
							copy(want[recvOff+q*n:recvOff+(q+1)*n], before[q][from:from+n])
						}
						assert.True(t, slices.Equal(want, reg), "rank %d", r)
					}
				})
			}
		}
	}
}

// TestMovementBadInput: spans outside the region, an overlapping send, a
// bad root and ranks that disagree on in-place are refused.
func TestMovementBadInput(t *testing.T) {
	ws := windows(t, 2, 4096)
	ctx := context.Background()
	require.ErrorIs(t, Broadcast(ctx, ws[0], 0, 1, 4000, 200, 0, time.Second), symm.ErrInvalid)
	require.ErrorIs(t, Broadcast(ctx, ws[0], 0, 1, 0, 8, 2, time.Second), symm.ErrInvalid)
	require.ErrorIs(t, AllGather(ctx, ws[0], 0, 1, 0, 2048, 2048, false, time.Second), symm.ErrInvalid)
	require.ErrorIs(t, AllGather(ctx, ws[0], 0, 1, 8, 0, 64, false, time.Second), symm.ErrInvalid, "send inside recv but not as this rank's block")
	errs := each(2, func(r int) error {
		return AllGather(ctx, ws[r], 0, 1, 1024, 0, 64, r == 0, 5*time.Second)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, symm.ErrMismatch, "rank %d", r)
	}
}
