package pgbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// Collective mismatch detection (HCCL_GO_CHECK=1, or
// TORCH_DISTRIBUTED_DEBUG=DETAIL): before each collective the ranks
// all-gather a 64-byte fingerprint of it (op, sequence number, bytes,
// dtype, reduce op, root, stream, per-rank counts) on the op's own stream,
// and every rank compares all of them. A mismatch fails the op on every
// rank alike, with the same list of differing fields, instead of a hang or
// wrong data; the ranks stay in step, so the communicator remains usable.
//
// The exchange always takes one route per stream (the stream's arena when
// the communicator lives on one host, else messages), whatever route the
// op itself would take, so two ranks issuing different ops still meet in
// it.

// ErrMismatch wraps the error of a collective that ranks issued differently.
var ErrMismatch = errors.New("collective mismatch")

const fingerprintSize = 64

// opKinds numbers op names in fingerprints.
var opKinds = []string{"allreduce", "broadcast", "reduce", "allgather", "allgatherv", "reducescatter",
	"reducescatterv", "alltoallv", "gather", "scatter", "barrier"}

// fingerprint encodes what must agree across ranks. An all_to_all's byte
// count legitimately differs per rank, so it is left out for alltoallv.
func (d opDesc) fingerprint() []byte {
	b := make([]byte, fingerprintSize)
	kind := slices.Index(opKinds, d.Kind)
	nbytes := int64(d.Bytes)
	if d.Kind == "alltoallv" {
		nbytes = -1
	}
	binary.LittleEndian.PutUint64(b[0:], d.Seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(nbytes))
	binary.LittleEndian.PutUint64(b[16:], d.Counts)
	binary.LittleEndian.PutUint32(b[24:], uint32(int32(kind)))
	binary.LittleEndian.PutUint32(b[28:], uint32(d.DType))
	binary.LittleEndian.PutUint32(b[32:], uint32(d.RedOp))
	binary.LittleEndian.PutUint32(b[36:], uint32(int32(d.Root)))
	binary.LittleEndian.PutUint32(b[40:], uint32(int32(d.Stream)))
	return b
}

// fingerprintField is one compared field: its name and how to show it.
type fingerprintField struct {
	name string
	off  int
	size int
	show func(v int64) string
}

var fingerprintFields = []fingerprintField{
	{"op", 24, 4, func(v int64) string {
		if v < 0 || int(v) >= len(opKinds) {
			return "?"
		}
		return opKinds[v]
	}},
	{"seq", 0, 8, func(v int64) string { return fmt.Sprint(v) }},
	{"bytes", 8, 8, func(v int64) string { return fmt.Sprint(v) }},
	{"dtype", 28, 4, func(v int64) string { return orNone(dtypeName(reduce.DType(v))) }},
	{"reduce op", 32, 4, func(v int64) string { return orNone(redOpName(reduce.Op(v))) }},
	{"root", 36, 4, func(v int64) string { return orNone(intOrEmpty(v)) }},
	{"stream", 40, 4, func(v int64) string { return streamName(int(v)) }},
	{"counts", 16, 8, func(v int64) string { return fmt.Sprintf("%#x", uint64(v)) }},
}

func (f fingerprintField) value(fp []byte) int64 {
	if f.size == 8 {
		return int64(binary.LittleEndian.Uint64(fp[f.off:]))
	}
	return int64(int32(binary.LittleEndian.Uint32(fp[f.off:])))
}

// compareFingerprints returns "" when all ranks' fingerprints (size of them,
// back to back) agree, else the fields that differ and who holds which
// value, e.g. "bytes: 4096 on ranks [0 2 3], 8192 on ranks [1]".
func compareFingerprints(all []byte, size int) string {
	var diffs []string
	for _, f := range fingerprintFields {
		var values []int64
		holders := map[int64][]int{}
		for r := range size {
			v := f.value(all[r*fingerprintSize : (r+1)*fingerprintSize])
			if _, seen := holders[v]; !seen {
				values = append(values, v)
			}
			holders[v] = append(holders[v], r)
		}
		if len(values) < 2 {
			continue
		}
		parts := make([]string, len(values))
		for i, v := range values {
			parts[i] = fmt.Sprintf("%s on ranks %v", f.show(v), holders[v])
		}
		diffs = append(diffs, f.name+": "+strings.Join(parts, ", "))
	}
	return strings.Join(diffs, "; ")
}

// checkCollective exchanges op's fingerprint with every rank and fails
// with ErrMismatch when they differ.
func (c *Communicator) checkCollective(ctx context.Context, op opDesc) error {
	all := make([]byte, c.size*fingerprintSize)
	var err error
	if a := c.arenaFor(op.Stream, collectives.Options{}); a != nil {
		err = intra.AllGather(ctx, a, op.Seq, op.fingerprint(), all)
	} else {
		err = collectives.AllGather(ctx, c.ep, checkTagBit|transport.Tag(op.Seq), op.fingerprint(), all, collectives.Options{})
	}
	if err != nil {
		return fmt.Errorf("exchanging fingerprints (HCCL_GO_CHECK): %w", err)
	}
	if diff := compareFingerprints(all, c.size); diff != "" {
		return fmt.Errorf("%w (HCCL_GO_CHECK): the ranks issued different collectives: %s", ErrMismatch, diff)
	}
	return nil
}

// setCheck parses HCCL_GO_CHECK: 1, 0, or auto (on when
// TORCH_DISTRIBUTED_DEBUG=DETAIL, PyTorch's switch for the same check).
func setCheck(c *Config, v string) error {
	if strings.EqualFold(v, "auto") {
		c.Check = strings.EqualFold(os.Getenv("TORCH_DISTRIBUTED_DEBUG"), "DETAIL")
		return nil
	}
	return setBool(&c.Check, v)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func intOrEmpty(v int64) string {
	if v < 0 {
		return ""
	}
	return fmt.Sprint(v)
}
