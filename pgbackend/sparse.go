package pgbackend

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport"
)

// SparseAllReduce sums every rank's (indices[j], values[j]) pairs into
// dense (overwritten) on every rank: collectives.SparseAllReduce, whose
// fill-in rule switches to a dense Sum all_reduce (in the shared-memory
// arena on single-host communicators, else the communicator's own
// algorithm choice). indices index dense's elements of
// dt (one of collectives.SparseValueTypes); every rank passes the same
// len(dense). The buffers must stay valid until the Work completes.
func (c *Communicator) SparseAllReduce(indices []int64, values []byte, dt reduce.DType, dense []byte, stream int) (*streams.Work, error) {
	if err := collectives.CheckSparse(indices, values, dt, dense); err != nil {
		return nil, c.invalid("sparse_allreduce", "%v", err)
	}
	o := c.options("allreduce", 0)
	if o.Algo == "shm" {
		o.Algo = collectives.Auto // names the arena path, which has no sparse variant
	}
	// The dense fallback's algorithm and wire format, chosen now as
	// AllReduce's: compressed (float32 only), the dense all_reduce sends
	// half the bytes, so the fill-in rule goes dense at half the lists.
	denseOpts, comp := c.pickAllReduce(stream, len(dense), dt, reduce.Sum, o)
	denseFactor := collectives.DefaultDenseFactor
	if comp != collectives.NoCompression {
		denseFactor *= collectives.WireRatio
	}
	desc := reduction("sparse_allreduce", len(dense), dt, reduce.Sum, -1).compressed(comp)
	return c.submitCollective(stream, desc, func(ctx context.Context, tag transport.Tag) error {
		so := collectives.SparseOptions{Options: o, DenseFactor: denseFactor}
		so.Dense = func(ctx context.Context, buf []byte) error {
			if a := c.arenaFor(stream, denseOpts); a != nil {
				return intra.AllReduce(ctx, a, uint64(tag), buf, buf, dt, reduce.Sum, 0)
			}
			return c.allReduce(ctx, stream, tag, buf, buf, dt, reduce.Sum, comp, denseOpts)
		}
		_, err := collectives.SparseAllReduce(ctx, c.ep, tag, indices, values, dt, dense, so)
		return err
	})
}
