package intra

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Mismatch detection. Every collective posts its first epoch with a stamp
// of what it is on this rank (which collective, seq, bytes, dtype, reduce
// op, root); after waiting for that epoch, and before reading any peer's
// data, each rank compares every peer's stamp with its own. If any two
// ranks differ, every rank differs from at least one other, so all of them
// fail the op after that one epoch: no data is used, the epochs still
// agree, and the arena stays usable.

// ErrMismatch is wrapped by the error of a collective that the ranks
// called differently: another collective, another sequence number, or
// other sizes, dtype, reduce op or root. It wraps
// collectives.ErrInvalidArgument. Every rank of the call gets it, none
// reads a peer's data (recv holds at most what the rank copies from its
// own send: its block of an all_gather or all_to_all, a broadcast root's
// payload), and the arena stays usable.
var ErrMismatch = fmt.Errorf("%w: ranks called different collectives", collectives.ErrInvalidArgument)

// opKind numbers the collectives in stamps.
type opKind uint8

const (
	kindAllReduce opKind = iota + 1
	kindReduce
	kindBroadcast
	kindAllGather
	kindReduceScatter
	kindAllToAllV
	kindBarrier
	kindReduceScatterV
	kindAllGatherV
)

var kindNames = [...]string{
	kindAllReduce:     "allreduce",
	kindReduce:        "reduce",
	kindBroadcast:     "broadcast",
	kindAllGather:     "allgather",
	kindReduceScatter: "reducescatter",
	kindAllToAllV:     "alltoallv",
	kindBarrier:       "barrier",

	kindReduceScatterV: "reducescatterv",
	kindAllGatherV:     "allgatherv",
}

func (k opKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("collective %d", uint8(k))
}

// isReduction reports whether dtype and reduce op are part of the call.
func (k opKind) isReduction() bool {
	return k == kindAllReduce || k == kindReduce || k == kindReduceScatter || k == kindReduceScatterV
}

// bytesLabel says what opStamp.bytes counts for k.
func (k opKind) bytesLabel() string {
	if k == kindAllGather || k == kindReduceScatter {
		return "bytes per rank"
	}
	return "bytes"
}

// opStamp is what must agree across the ranks of a call. Fields that a
// collective does not have stay zero (root: noRoot).
type opStamp struct {
	kind  opKind
	seq   uint64
	bytes int // see opKind.bytesLabel
	dt    reduce.DType
	op    reduce.Op
	root  int // local index, or noRoot
	// singleCopy: the call starts the single-copy exchange (its first
	// epoch carries addresses, not data).
	singleCopy bool
}

// noRoot is the root of collectives that have none.
const noRoot = -1

// encode packs the stamp for the arena: Op holds kind, dtype, reduce op,
// the single-copy flag (a byte each) and root (32 bits).
func (s opStamp) encode() arena.Stamp {
	op := uint64(s.kind) | uint64(uint8(s.dt))<<8 | uint64(uint8(s.op))<<16 | uint64(uint32(int32(s.root)))<<32
	if s.singleCopy {
		op |= 1 << 24
	}
	return arena.Stamp{Op: op, Seq: s.seq, Size: uint64(s.bytes)}
}

func decodeStamp(w arena.Stamp) opStamp {
	return opStamp{
		kind:  opKind(w.Op),
		seq:   w.Seq,
		bytes: int(w.Size),
		dt:    reduce.DType(uint8(w.Op >> 8)),
		op:    reduce.Op(uint8(w.Op >> 16)),
		root:  int(int32(uint32(w.Op >> 32))),

		singleCopy: uint8(w.Op>>24) != 0,
	}
}

// The hot path passes the encoded stamp (three words, in registers) rather
// than an opStamp.

// postFirst posts epoch e, the first of the op, with the op's stamp.
func postFirst(a *arena.Arena, e uint64, s arena.Stamp) {
	a.PostStamped(e, s)
}

// awaitFirst waits until every peer has posted epoch e, the first of the
// op, and checks that they all run the same op as this rank.
func awaitFirst(ctx context.Context, a *arena.Arena, e uint64, own arena.Stamp) error {
	if err := a.WaitAllInline(ctx, e); err != nil {
		return err
	}
	me := a.Index()
	for j := range a.Size() {
		if j != me {
			if s := a.StampOf(j, e); s != own {
				return decodeStamp(own).mismatch(a.Ranks()[j], decodeStamp(s))
			}
		}
	}
	return nil
}

// post posts epoch e of the op, with its stamp when e is the first.
func post(a *arena.Arena, e uint64, s arena.Stamp, first bool) {
	if first {
		postFirst(a, e, s)
		return
	}
	a.Post(e)
}

// await waits until every peer has posted epoch e of the op, and checks
// their stamps when e is the first.
func await(ctx context.Context, a *arena.Arena, e uint64, s arena.Stamp, first bool) error {
	if first {
		return awaitFirst(ctx, a, e, s)
	}
	return a.WaitAll(ctx, e)
}

// stampOnly is a whole op of one stamped epoch without data: a barrier,
// and the empty calls (which still meet, so that a rank passing no data
// where its peers pass some is noticed).
func stampOnly(ctx context.Context, a *arena.Arena, s arena.Stamp) error {
	e := a.Next()
	postFirst(a, e, s)
	return awaitFirst(ctx, a, e, s)
}

// mismatch describes how peer (a global rank) runs another op than s, e.g.
// "rank 1 has 32 bytes, this rank 16".
func (s opStamp) mismatch(peer int, o opStamp) error {
	var d []string
	if o.kind != s.kind {
		d = append(d, fmt.Sprintf("rank %d called %v, this rank %v", peer, o.kind, s.kind))
	}
	if o.seq != s.seq {
		d = append(d, fmt.Sprintf("rank %d is at seq %d, this rank at seq %d", peer, o.seq, s.seq))
	}
	if o.kind == s.kind {
		if o.bytes != s.bytes {
			d = append(d, fmt.Sprintf("rank %d has %d %s, this rank %d", peer, o.bytes, s.kind.bytesLabel(), s.bytes))
		}
		if s.kind.isReduction() && o.dt != s.dt {
			d = append(d, fmt.Sprintf("rank %d has dtype %v, this rank %v", peer, o.dt, s.dt))
		}
		if s.kind.isReduction() && o.op != s.op {
			d = append(d, fmt.Sprintf("rank %d reduces with %v, this rank with %v", peer, o.op, s.op))
		}
		if o.root != s.root {
			d = append(d, fmt.Sprintf("rank %d has root %d, this rank %d", peer, o.root, s.root))
		}
		if o.singleCopy != s.singleCopy {
			d = append(d, fmt.Sprintf("rank %d tries single-copy %v, this rank %v (pass a SingleCopy on every rank or none)", peer, o.singleCopy, s.singleCopy))
		}
	}
	if len(d) == 0 { // cannot happen: the words differ
		d = append(d, fmt.Sprintf("rank %d stamped %+v, this rank %+v", peer, o, s))
	}
	return fmt.Errorf("%w: %s", ErrMismatch, strings.Join(d, "; "))
}

// endOp ends the arena operation started by Begin. A mismatch leaves the
// ranks in step (they all stopped after the stamped epoch); any other
// error breaks the arena.
func endOp(a *arena.Arena, err error) {
	if err != nil && errors.Is(err, ErrMismatch) {
		a.End(nil)
		return
	}
	a.End(err)
}
