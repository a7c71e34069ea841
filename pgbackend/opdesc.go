package pgbackend

import (
	"fmt"
	"strconv"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// opDesc describes one operation: for its error messages, its flight
// recorder entry and its fingerprint (HCCL_GO_CHECK). Fields that do not
// apply to an op are -1 (DType, RedOp, Root, Peer).
type opDesc struct {
	Kind   string // "allreduce", "broadcast", ..., "send", "recv"
	Seq    uint64 // collective sequence number; 0 for point-to-point
	Bytes  int    // the size the op is known by in messages (see ops.go)
	DType  reduce.DType
	RedOp  reduce.Op
	Root   int
	Peer   int    // point-to-point peer
	Tag    uint32 // point-to-point tag
	Counts uint64 // hash of a v-collective's per-rank counts (0: none)
	Stream int    // collective stream index; -1 for point-to-point
	Algo   collectives.Algorithm
	// Compression is the wire format of a compressed all_reduce ("" or
	// "none": uncompressed).
	Compression collectives.Compression
	Route       string // "arena", "hier+arena", "hier", "numa+arena", "symmetric", "messages" or "p2p", set when queued
}

// reduction describes a collective with a reduction (dt and op apply).
func reduction(kind string, nbytes int, dt reduce.DType, op reduce.Op, root int) opDesc {
	return opDesc{Kind: kind, Bytes: nbytes, DType: dt, RedOp: op, Root: root, Peer: -1}
}

// movement describes a collective that moves bytes without reducing them.
func movement(kind string, nbytes, root int) opDesc {
	return opDesc{Kind: kind, Bytes: nbytes, DType: -1, RedOp: -1, Root: root, Peer: -1}
}

// compressed records the wire format of a compressed op.
func (d opDesc) compressed(c collectives.Compression) opDesc {
	if c != collectives.NoCompression {
		d.Compression = c
	}
	return d
}

// p2pOp describes a send or receive.
// anyPeer is the Peer of a receive from whichever rank sends first.
const anyPeer = -2

func p2pOp(kind string, nbytes, peer int, tag uint32) opDesc {
	return opDesc{Kind: kind, Bytes: nbytes, DType: -1, RedOp: -1, Root: -1, Peer: peer, Tag: tag, Stream: -1, Route: "p2p"}
}

// withCounts adds a hash of per-rank counts, which must agree on all ranks.
func (d opDesc) withCounts(counts []int) opDesc {
	h := uint64(14695981039346656037) // FNV-1a
	for _, n := range counts {
		for i := 0; i < 64; i += 8 {
			h ^= uint64(n>>i) & 0xff
			h *= 1099511628211
		}
	}
	d.Counts = h
	return d
}

// isP2P reports whether the op is a send or a receive.
func (d opDesc) isP2P() bool { return d.Route == "p2p" }

// name is the op as errors name it, e.g. "allreduce seq 7 (4096 bytes) on
// rank 0 of 2" or "send 16 bytes to rank 1 tag 0 from rank 0".
func (d opDesc) name(rank, size int) string {
	switch d.Kind {
	case "send":
		return fmt.Sprintf("send %d bytes to rank %d tag %d from rank %d", d.Bytes, d.Peer, d.Tag, rank)
	case "recv":
		if d.Peer == anyPeer {
			return fmt.Sprintf("recv %d bytes from any rank tag %d on rank %d", d.Bytes, d.Tag, rank)
		}
		return fmt.Sprintf("recv %d bytes from rank %d tag %d on rank %d", d.Bytes, d.Peer, d.Tag, rank)
	}
	// Every collective builds this name, so without fmt (a quarter of a
	// small op's issue cost): "%s seq %d (%d bytes) on rank %d of %d".
	b := make([]byte, 0, 64)
	b = append(b, d.Kind...)
	b = append(b, " seq "...)
	b = strconv.AppendUint(b, d.Seq, 10)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(d.Bytes), 10)
	b = append(b, " bytes) on rank "...)
	b = strconv.AppendInt(b, int64(rank), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(size), 10)
	return string(b)
}

// short is the op without the rank, for messages to peers.
func (d opDesc) short() string {
	if d.isP2P() {
		return fmt.Sprintf("%s %d bytes peer %d tag %d", d.Kind, d.Bytes, d.Peer, d.Tag)
	}
	return fmt.Sprintf("%s seq %d (%d bytes)", d.Kind, d.Seq, d.Bytes)
}

func dtypeName(dt reduce.DType) string {
	if dt < 0 {
		return ""
	}
	return dt.String()
}

func redOpName(op reduce.Op) string {
	if op < 0 {
		return ""
	}
	return op.String()
}

// algo records the op's algorithm: the one chosen when it was issued (the
// override in force, or the cost model's choice), or Auto.
func (d opDesc) algo(o collectives.Options) opDesc {
	d.Algo = o.Algo
	return d
}
