package pgbackend

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// Wire compression (HCCL_GO_COMPRESSION, option key compression): float32
// Sum/Avg/PreMulSum all_reduces travel as float16 or bfloat16 messages with
// float32 accumulation (collectives.AllReduceCompressed). It applies to
// the message path only, TCP across hosts above all: single-host
// communicators run all_reduce in a shared-memory arena, where there is no
// link to save bytes on, and those stay exact. Across hosts a compressed
// all_reduce is the compressed ring over every link, intra-host ones
// included, in place of the hierarchical algorithm. Other dtypes and ops
// are never compressed.

// compression is the communicator's wire compression setting.
func (c *Communicator) compression() collectives.Compression {
	if c.cfg.Compression == "" {
		return collectives.NoCompression
	}
	return c.cfg.Compression
}

// allReduceCompressed runs the all_reduce compressed when the communicator
// asks for compression and dt/op allow it; handled is false otherwise (the
// caller runs the uncompressed algorithm). Compression uses the ring
// whatever algorithm o names.
func (c *Communicator) allReduceCompressed(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, o collectives.Options) (handled bool, err error) {
	comp := c.compression()
	if comp == collectives.NoCompression || !collectives.Compressible(dt, op) {
		return false, nil
	}
	o.Algo = collectives.Ring
	return true, collectives.AllReduceCompressed(ctx, c.ep, tag, send, recv, dt, op, comp, o)
}
