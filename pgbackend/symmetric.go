package pgbackend

import (
	"context"
	"slices"
	"sync"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/inplace"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/symm"
)

// Symmetric tensors: an all_reduce whose send and recv buffers both lie in
// one symmetric allocation made on this communicator (transport/symm;
// hcclGoMemAlloc, torch_hccl_go.symm.empty), registered here with
// RegisterWindow, reads every rank's input where it lies and writes every
// rank's output (collectives/inplace) rather than copying through the
// arena; so do a broadcast and an all_gather whose recv lies in one (the
// root's send, or a rank's block, copied into its recv first), and a
// reduce_scatter whose send lies in one (its recv is the rank's own). Every rank of the communicator must be on this host and in the
// window, and every rank must pass buffers at the same offsets: the
// in-place op's entry barrier compares them and fails every rank that
// entered when they differ; a rank that passed ordinary buffers runs the
// arena's algorithm instead, and both sides time out.

// algoSymm is the in-place algorithm's name in op descriptions and traces.
const algoSymm collectives.Algorithm = "symmetric"

// SymmetricMinBytes is the smallest all_reduce that runs in place: below
// it the in-place op's two barriers cost more than the arena's copies save
// (all_reduce at 2 ranks, bench/symm_ops.py: 128 KiB 0.85x the arena's
// speed, 256 KiB 1.7-1.8x; broadcast 256 KiB 1.0-1.5x). The C lane declines the same
// sizes (export/symm_spans.c), so every rank takes the same path.
const SymmetricMinBytes = 256 << 10

// SymmetricBlockMinBytes is the smallest all_gather output and
// reduce_scatter input that run in place: these ops move each rank's block
// once either way (the arena's single-copy gather reads in place too), and
// gain only from a cheaper set-up, which the C lane's own loops match below
// 1 MiB (measured at 2 ranks, in place against the arena: all_gather 256 KiB
// 0.73x, 1 MiB 1.04x, 16 MiB 1.4x; reduce_scatter 256 KiB 0.57x, 1 MiB
// 1.06x, 16 MiB 1.54x).
const SymmetricBlockMinBytes = 1 << 20

// symmetricWindows are the windows registered on a communicator.
type symmetricWindows struct {
	mu sync.RWMutex
	ws []*symm.Window
}

// RegisterWindow lets the communicator's collectives on buffers inside w
// run in place, when w spans the communicator's ranks, all on this host;
// it reports whether it registered w.
func (c *Communicator) RegisterWindow(w *symm.Window) bool {
	if w.Size() != c.size || w.Rank() != c.rank {
		return false
	}
	for r := range w.Size() {
		if !w.Local(r) {
			return false
		}
	}
	c.symm.mu.Lock()
	defer c.symm.mu.Unlock()
	c.symm.ws = append(c.symm.ws, w)
	return true
}

// UnregisterWindow undoes RegisterWindow (before w closes).
func (c *Communicator) UnregisterWindow(w *symm.Window) {
	c.symm.mu.Lock()
	defer c.symm.mu.Unlock()
	c.symm.ws = slices.DeleteFunc(c.symm.ws, func(x *symm.Window) bool { return x == w })
}

// symmetricSpan finds the registered window that holds both send and recv
// in this rank's region, and their offsets there (ok false: none).
func (c *Communicator) symmetricSpan(send, recv []byte) (w *symm.Window, sendOff, recvOff int, ok bool) {
	c.symm.mu.RLock()
	defer c.symm.mu.RUnlock()
	for _, w := range c.symm.ws {
		region, err := w.Region(c.rank)
		if err != nil {
			continue
		}
		s, sok := offsetIn(region, send)
		r, rok := offsetIn(region, recv)
		if sok && rok {
			return w, s, r, true
		}
	}
	return nil, 0, 0, false
}

// symmetricOf is symmetricSpan for one buffer.
func (c *Communicator) symmetricOf(buf []byte) (w *symm.Window, off int, ok bool) {
	w, off, _, ok = c.symmetricSpan(buf, buf)
	return w, off, ok
}

// offsetIn is where b starts in region, when b lies inside it.
func offsetIn(region, b []byte) (int, bool) {
	if len(region) == 0 || len(b) == 0 {
		return 0, false
	}
	base, p := uintptr(unsafe.Pointer(&region[0])), uintptr(unsafe.Pointer(&b[0]))
	if p < base || p-base > uintptr(len(region)-len(b)) {
		return 0, false
	}
	return int(p - base), true
}

// symmetricAllReduce is the body of an all_reduce on symmetric buffers, or
// nil when send and recv are not such buffers, the op is smaller than
// SymmetricMinBytes, or dt and op are not in place's (inplace.Supported).
func (c *Communicator) symmetricAllReduce(stream int, send, recv []byte, dt reduce.DType, op reduce.Op) func(ctx context.Context, tag transport.Tag) error {
	if len(send) < SymmetricMinBytes || stream < 0 || stream >= symm.Channels || !inplace.Supported(dt, op) {
		return nil
	}
	w, sendOff, recvOff, ok := c.symmetricSpan(send, recv)
	if !ok {
		return nil
	}
	return func(ctx context.Context, tag transport.Tag) error {
		return inplace.AllReduce(ctx, w, stream, uint64(tag), sendOff, recvOff, len(send), dt, op, c.cfg.Timeout)
	}
}

// symmetricBroadcast is the body of a broadcast into a symmetric recv of
// SymmetricMinBytes or more (nil otherwise): the root copies send into its
// recv first when they differ, then every rank reads the root's.
func (c *Communicator) symmetricBroadcast(stream int, send, recv []byte, root int) func(ctx context.Context, tag transport.Tag) error {
	if len(recv) < SymmetricMinBytes || stream < 0 || stream >= symm.Channels {
		return nil
	}
	w, off, ok := c.symmetricOf(recv)
	if !ok {
		return nil
	}
	return func(ctx context.Context, tag transport.Tag) error {
		if c.rank == root && !sameMemory(send, recv) {
			copy(recv, send)
		}
		return inplace.Broadcast(ctx, w, stream, uint64(tag), off, len(recv), root, c.cfg.Timeout)
	}
}

// symmetricAllGather is the body of an all_gather into a symmetric recv of
// SymmetricBlockMinBytes or more (nil otherwise): each rank copies its send into
// its own block first when it is not there, then reads the others' blocks.
func (c *Communicator) symmetricAllGather(stream int, send, recv []byte) func(ctx context.Context, tag transport.Tag) error {
	if len(recv) < SymmetricBlockMinBytes || stream < 0 || stream >= symm.Channels {
		return nil
	}
	w, off, ok := c.symmetricOf(recv)
	if !ok {
		return nil
	}
	n := len(send)
	if partialOverlap(send, recv) && !sameMemory(send, recv[c.rank*n:(c.rank+1)*n]) {
		return nil // the arena's path refuses it
	}
	return func(ctx context.Context, tag transport.Tag) error {
		if own := recv[c.rank*n : (c.rank+1)*n]; !sameMemory(send, own) {
			copy(own, send)
		}
		return inplace.AllGather(ctx, w, stream, uint64(tag), 0, off, n, true, c.cfg.Timeout)
	}
}

// sameMemory says whether a and b are the very same bytes.
func sameMemory(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// symmetricReduceScatter is the body of a reduce_scatter whose send is
// symmetric, of SymmetricBlockMinBytes or more (nil otherwise, and for dt and op
// in place does not run): each rank folds its block from every rank's send
// into its recv, which may be any memory of its own.
func (c *Communicator) symmetricReduceScatter(stream int, send, recv []byte, dt reduce.DType, op reduce.Op) func(ctx context.Context, tag transport.Tag) error {
	if len(send) < SymmetricBlockMinBytes || stream < 0 || stream >= symm.Channels || !inplace.Supported(dt, op) {
		return nil
	}
	w, off, ok := c.symmetricOf(send)
	if !ok {
		return nil
	}
	if partialOverlap(send, recv) && !sameMemory(recv, send[c.rank*len(recv):(c.rank+1)*len(recv)]) {
		return nil // the arena's path refuses it
	}
	return func(ctx context.Context, tag transport.Tag) error {
		return inplace.ReduceScatter(ctx, w, stream, uint64(tag), off, recv, dt, op, c.cfg.Timeout)
	}
}
