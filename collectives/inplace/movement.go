package inplace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/transport/symm"
)

// Broadcast and AllGather on symmetric memory. Broadcast: each rank, the
// root included, copies its piece (n/p bytes) of the root's span into every
// other rank's, so that all p ranks copy at once: (p-1)·n/p bytes read and
// written per rank. AllGather: every rank copies the other ranks' blocks
// into its own output, (p-1)·n bytes read and written, its own block too
// when out of place.

// Op codes in the description Enter compares, beside opAllReduce.
const (
	opBroadcast     = 2
	opAllGather     = 3
	opReduceScatter = 4
)

// Broadcast copies the n bytes at recvOff of root's region into the n bytes
// at recvOff of every other rank's region: the root's data must already be
// there (a caller with another source copies it in first).
func Broadcast(ctx context.Context, w *symm.Window, ch int, seq uint64, recvOff, n, root int, timeout time.Duration) error {
	p, me := w.Size(), w.Rank()
	if root < 0 || root >= p {
		return fmt.Errorf("in-place broadcast: %w: root %d out of range [0, %d)", symm.ErrInvalid, root, p)
	}
	spans := make([][]byte, p)
	for r := range p {
		var err error
		if spans[r], err = span(w, r, recvOff, n); err != nil {
			return fmt.Errorf("in-place broadcast rank %d: %w", me, err)
		}
	}
	desc := [symm.DescWords]uint64{seq, opBroadcast | uint64(root)<<8, uint64(recvOff), uint64(n)}
	return run(ctx, w, ch, desc, timeout, "broadcast", func() {
		lo, hi := piece(n, p, me)
		for k := 1; k < p; k++ {
			r := (root + k) % p
			copy(spans[r][lo:hi], spans[root][lo:hi])
		}
	})
}

// AllGather copies every rank's n bytes at sendOff into block r of the
// p·n bytes at recvOff of every rank's region. inPlace says that each
// rank's block is already at its place in its output (sendOff is then
// ignored: rank r's block is at recvOff + r·n).
func AllGather(ctx context.Context, w *symm.Window, ch int, seq uint64, sendOff, recvOff, n int, inPlace bool, timeout time.Duration) error {
	p, me := w.Size(), w.Rank()
	out, err := span(w, me, recvOff, p*n)
	if err != nil {
		return fmt.Errorf("in-place allgather rank %d: %w", me, err)
	}
	blocks := make([][]byte, p)
	for r := range p {
		off := sendOff
		if inPlace {
			off = recvOff + r*n
		}
		if blocks[r], err = span(w, r, off, n); err != nil {
			return fmt.Errorf("in-place allgather rank %d: %w", me, err)
		}
	}
	if !inPlace && sendOff < recvOff+p*n && recvOff < sendOff+n {
		return fmt.Errorf("in-place allgather: %w: send [%d, %d) overlaps recv [%d, %d) other than as this rank's block", symm.ErrInvalid, sendOff, sendOff+n, recvOff, recvOff+p*n)
	}
	mode := uint64(0)
	if inPlace {
		mode, sendOff = 1, 0
	}
	desc := [symm.DescWords]uint64{seq, opAllGather | mode<<8, uint64(sendOff), uint64(recvOff), uint64(n)}
	return run(ctx, w, ch, desc, timeout, "allgather", func() {
		for k := 1; k <= p; k++ {
			r := (me + k) % p // each rank starts with another's block
			if r != me || !inPlace {
				copy(out[r*n:(r+1)*n], blocks[r])
			}
		}
	})
}

// span is bytes [off, off+n) of rank r's region.
func span(w *symm.Window, r, off, n int) ([]byte, error) {
	region, err := w.Region(r)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off > len(region) || n > len(region)-off {
		return nil, fmt.Errorf("%w: bytes [%d, %d) outside a region of %d bytes", symm.ErrInvalid, off, off+n, len(region))
	}
	return region[off : off+n], nil
}

// run is an in-place collective's barriers around work.
func run(ctx context.Context, w *symm.Window, ch int, desc [symm.DescWords]uint64, timeout time.Duration, kind string, work func()) error {
	if err := w.Enter(ctx, ch, desc, timeout); err != nil {
		if errors.Is(err, symm.ErrMismatch) {
			return fmt.Errorf("in-place %s rank %d: %w (descriptions: sequence number, op, offsets, bytes; every rank must pass symmetric buffers at the same offsets)", kind, w.Rank(), err)
		}
		return fmt.Errorf("in-place %s rank %d: %w", kind, w.Rank(), err)
	}
	work()
	if err := w.Leave(ctx, ch, timeout); err != nil {
		return fmt.Errorf("in-place %s rank %d: %w", kind, w.Rank(), err)
	}
	return nil
}
