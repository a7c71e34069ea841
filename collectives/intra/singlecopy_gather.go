package intra

import (
	"context"
	"runtime"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/cma"
)

// The single-copy all_gather: every rank reads each peer's block straight
// from the peer's send buffer into its own recv with process_vm_readv, and
// copies its own block; nothing is staged in shared memory. The first
// epoch exchanges the buffers' addresses (SingleCopy.exchange, which also
// runs the agreement the first time); two last epochs end the op as in the
// single-copy all_reduce (singlecopy_reduce.go): F, "I read all I need of
// your buffers", and F+1, "I saw everyone post F", so that a rank returns
// only once nobody reads its send any more, and a rank that fails
// part-way cannot let a peer succeed with bytes read from a buffer handed
// back to its caller. Peers only read, never write, a rank's memory, so
// in place (send is the own block of recv) is safe.
//
// Bytes each rank reads+writes per payload byte of recv: the peers'
// blocks 2(p-1)/p (one kernel copy each), the own block 2/p (none in
// place): 2 in all, against the staged protocol's 2 + 2/p; tuning.go says
// where that wins.

// AllGatherWith is AllGather that reads the peers' blocks in place with
// process_vm_readv for recvs of singleCopyGatherMin to singleCopyGatherMax
// bytes (4 to 8 MiB), where the ranks agreed on it through sc (nil: never;
// every rank passes one or none, as for AllReduceWith).
func AllGatherWith(ctx context.Context, a *arena.Arena, sc *SingleCopy, seq uint64, send, recv []byte) error {
	if err := checkAllGather(a, send, recv); err != nil {
		return wrapOp("allgather", a, seq, err)
	}
	return wrapOp("allgather", a, seq, allGatherWith(ctx, a, sc, seq, send, recv, defaultTuning()))
}

func allGatherWith(ctx context.Context, a *arena.Arena, sc *SingleCopy, seq uint64, send, recv []byte, t tuning) error {
	if !sc.gatherUsable(len(recv), a.Size(), t) {
		return allGather(ctx, a, seq, send, recv, t)
	}
	return singleCopyAllGather(ctx, a, sc, seq, send, recv, t)
}

// gatherUsable reports whether an all_gather of n bytes of recv tries
// single-copy: all ranks answer alike (size, tuning, agreed state).
func (s *SingleCopy) gatherUsable(n, p int, t tuning) bool {
	return s != nil && p > 1 && t.singleCopyGatherMin > 0 && n >= t.singleCopyGatherMin && n <= t.singleCopyGatherMax &&
		s.state.Load() != scOff
}

func singleCopyAllGather(ctx context.Context, a *arena.Arena, sc *SingleCopy, seq uint64, send, recv []byte, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	st := opStamp{kind: kindAllGather, seq: seq, bytes: len(send), root: noRoot, singleCopy: true}
	ok, err := sc.exchange(ctx, a, st.encode(), send, recv)
	switch {
	case err != nil:
	case ok:
		err = readBlocks(ctx, a, sc, send, recv)
	default: // agreed against it just now: the staged protocol
		err = allGatherHalves(ctx, a, st.encode(), send, recv, evenBlocks(a.Size(), len(send)), t.copyBytes)
	}
	endOp(a, err)
	return err
}

// readBlocks is the single-copy all_gather once the addresses are known.
func readBlocks(ctx context.Context, a *arena.Arena, sc *SingleCopy, send, recv []byte) error {
	me, m := a.Index(), len(send)
	ranks := a.Ranks()
	for j, b := range sc.peers {
		if j == me || m == 0 {
			continue
		}
		if err := cma.ReadFast(b.pid, recv[j*m:(j+1)*m], b.send); err != nil {
			return peerCopyError(ranks[j], b.pid, err)
		}
	}
	args.CopyUnlessSame(recv[me*m:(me+1)*m], send)
	err := endReads(ctx, a)
	runtime.KeepAlive(send) // read by the peers until the first of endReads' epochs
	return err
}

// endReads runs the two epochs that end a single-copy op once this rank
// has read all it needs of the peers' buffers: F ("I read all I need of
// yours") and F+1 ("I saw everyone post F"). A rank's buffers are safe to
// hand back to its caller once it has seen F from everyone.
func endReads(ctx context.Context, a *arena.Arena) error {
	for range 2 {
		e := a.Next()
		a.Post(e)
		if err := a.WaitAll(ctx, e); err != nil {
			return err
		}
	}
	return nil
}
