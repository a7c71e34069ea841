package collectives

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// AllReduce reduces send over all ranks with op and leaves the result in
// recv on every rank. send and recv have the same length, a multiple of the
// element size; they may be the same memory (in place).
//
// Avg sums, then divides by the world size once, identically on all ranks.
// PreMulSum first multiplies each rank's input by o.PreMul (reduce.Scale),
// then sums. Algorithms: Ring, RecursiveDoubling, HalvingDoubling; Auto
// picks with ChooseAllReduce.
func AllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, o Options) error {
	if err := checkAllReduce(ep, send, recv, dt, op, o); err != nil {
		return wrapOp("allreduce", rankOf(ep), err)
	}
	return wrapOp("allreduce", ep.Rank(), allReduce(ctx, ep, tag, send, recv, dt, op, o))
}

func checkAllReduce(ep transport.Endpoint, send, recv []byte, dt reduce.DType, op reduce.Op, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return err
	}
	if err := args.CheckReduction(dt, op); err != nil {
		return err
	}
	if err := checkOptions(o, Ring, RecursiveDoubling, HalvingDoubling); err != nil {
		return err
	}
	return args.CheckAllReduceBuffers(send, recv, dt)
}

func allReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, o Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	src := prepareInput(send, recv, dt, op, o)
	p := ep.Size()
	if p == 1 {
		args.CopyUnlessSame(recv, src)
		finishAvg(recv, dt, op, p)
		return nil
	}
	algo := o.Algo
	if algo == Auto {
		algo = ChooseAllReduce(p, len(recv))
	}
	divide := op == reduce.Avg
	switch algo {
	case RecursiveDoubling:
		return rdAllReduce(ctx, ep, tag, src, recv, dt, op, divide)
	case HalvingDoubling:
		return hdAllReduce(ctx, ep, tag, src, recv, dt, op, divide, o.chunkBytes(dt.Size()))
	default:
		return ringAllReduce(ctx, ep, tag, src, recv, dt, op, divide, o.chunkBytes(dt.Size()))
	}
}

// prepareInput returns the buffer a reduction starts from. For PreMulSum
// that is this rank's input scaled by o.PreMul, written into work (which
// then serves as the input of an in-place reduction); otherwise send.
func prepareInput(send, work []byte, dt reduce.DType, op reduce.Op, o Options) []byte {
	if op != reduce.PreMulSum {
		return send
	}
	reduce.Scale(dt, work, send, o.PreMul)
	return work
}

// finishAvg divides a complete sum by the world size for Avg.
func finishAvg(buf []byte, dt reduce.DType, op reduce.Op, p int) {
	if op == reduce.Avg {
		reduce.DivideBy(dt, buf, p)
	}
}
