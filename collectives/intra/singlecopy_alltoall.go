package intra

import (
	"context"
	"runtime"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/cma"
)

// The single-copy all_to_all of equal blocks: every rank reads the block
// each peer sends it straight from the peer's send buffer into its own
// recv with process_vm_readv, and copies its own block; the first epoch
// exchanges the buffers' addresses and two last epochs end the op, as in
// the single-copy all_gather (singlecopy_gather.go), whose agreement it
// shares.
//
// Bytes each rank reads+writes per byte of recv: the peers' blocks
// 2(p-1)/p (one kernel copy each), the own block 2/p: 2 in all, against
// the staged exchange's 4(p-1)/p + 2/p (each peer block written into the
// arena by its sender and read out by its receiver). tuning.go says from
// which size that pays for the extra epochs.

// AllToAllWith sends block j of send (len(send)/p bytes) to local rank j,
// which receives it as block i of its recv, on every rank: AllToAllV with
// even blocks. Every rank passes the same len(send). Exchanges of
// singleCopyAllToAllMin (1 MiB) of recv or more read the peers' blocks in
// place where the ranks agreed on single-copy through sc (nil: never;
// every rank passes one or none). send and recv may overlap (send is then
// copied first).
func AllToAllWith(ctx context.Context, a *arena.Arena, sc *SingleCopy, seq uint64, send, recv []byte) error {
	return wrapOp("alltoall", a, seq, allToAllWith(ctx, a, sc, seq, send, recv, defaultTuning()))
}

func allToAllWith(ctx context.Context, a *arena.Arena, sc *SingleCopy, seq uint64, send, recv []byte, t tuning) error {
	if err := checkArena(a); err != nil {
		return err
	}
	p := a.Size()
	if len(send) != len(recv) || len(send)%p != 0 {
		return args.Invalidf("send of %d bytes and recv of %d: want equal lengths, a multiple of %d ranks", len(send), len(recv), p)
	}
	b := evenBlocks(p, len(send)/p)
	x := exchange{send: send, sendCounts: b.size, sendDispls: b.off, recv: recv, recvCounts: b.size, recvDispls: b.off}
	x.stamp = opStamp{kind: kindAllToAllV, seq: seq, root: noRoot}.encode()
	if !sc.allToAllUsable(len(recv), p, t) {
		return x.run(ctx, a, seq, t)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if args.Overlap(x.send, x.recv) {
		x.send = append([]byte(nil), x.send...) // peers read it while recv is written
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	st := opStamp{kind: kindAllToAllV, seq: seq, bytes: len(send), root: noRoot, singleCopy: true}
	ok, err := sc.exchange(ctx, a, st.encode(), x.send, x.recv)
	var mismatch error
	switch {
	case err != nil:
	case ok:
		err = readOwnBlocks(ctx, a, sc, x.send, x.recv)
	default: // agreed against it just now: the staged exchange
		mismatch, err = x.rounds(ctx, a, t)
	}
	endOp(a, err)
	if err != nil {
		return err
	}
	return mismatch
}

// readOwnBlocks is the single-copy all_to_all once the addresses are
// known: block me of every peer's send, into block j of recv.
func readOwnBlocks(ctx context.Context, a *arena.Arena, sc *SingleCopy, send, recv []byte) error {
	me := a.Index()
	m := len(send) / a.Size()
	ranks := a.Ranks()
	for j, b := range sc.peers {
		if j == me || m == 0 {
			continue
		}
		if err := cma.ReadFast(b.pid, recv[j*m:(j+1)*m], b.send+uintptr(me*m)); err != nil {
			return peerCopyError(ranks[j], b.pid, err)
		}
	}
	copy(recv[me*m:(me+1)*m], send[me*m:(me+1)*m])
	err := endReads(ctx, a)
	runtime.KeepAlive(send) // read by the peers until the first of endReads' epochs
	return err
}

// allToAllUsable reports whether an even all_to_all of n bytes of recv
// tries single-copy: all ranks answer alike (size, tuning, agreed state).
func (s *SingleCopy) allToAllUsable(n, p int, t tuning) bool {
	return s != nil && p > 1 && t.singleCopyAllToAllMin > 0 && n >= t.singleCopyAllToAllMin && n <= t.singleCopyAllToAllMax &&
		s.state.Load() != scOff
}
