package collectives

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// foldedGroup maps a world of any size p onto a power of two q <= p, the
// shape recursive doubling and halving need. The first 2(p-q) ranks pair up
// (2i, 2i+1): the even rank hands its input to the odd one and sits out;
// the odd one takes part as virtual rank i. Ranks from 2(p-q) on are
// virtual ranks r-(p-q). Virtual ranks keep the order of real ranks.
type foldedGroup struct {
	p, q, extra int // extra = p - q
}

func newFoldedGroup(p int) foldedGroup {
	q := 1
	for q*2 <= p {
		q *= 2
	}
	return foldedGroup{p: p, q: q, extra: p - q}
}

// virtual returns the virtual rank of real rank r, or -1 if r sits out.
func (f foldedGroup) virtual(r int) int {
	switch {
	case r >= 2*f.extra:
		return r - f.extra
	case r%2 == 1:
		return r / 2
	default:
		return -1
	}
}

// real returns the real rank of virtual rank v.
func (f foldedGroup) real(v int) int {
	if v < f.extra {
		return 2*v + 1
	}
	return v + f.extra
}

// foldIn combines the inputs of each pair (2i, 2i+1) on the odd rank as
// (even's value) op (odd's value), in place in buf; scratch holds len(buf).
func (f foldedGroup) foldIn(ctx context.Context, ep transport.Endpoint, tag transport.Tag, buf, scratch []byte, dt reduce.DType, op reduce.Op) error {
	r := ep.Rank()
	if r >= 2*f.extra || len(buf) == 0 {
		return nil
	}
	if r%2 == 0 {
		return wrapStep("fold", sendTo(ctx, ep, tag, r+1, buf))
	}
	if err := recvFrom(ctx, ep, tag, r-1, scratch); err != nil {
		return wrapStep("fold", err)
	}
	reduce.Reduce3(dt, op, buf, scratch, buf)
	return nil
}

// foldOut hands the result back from each odd rank to its even partner.
func (f foldedGroup) foldOut(ctx context.Context, ep transport.Endpoint, tag transport.Tag, buf []byte) error {
	r := ep.Rank()
	if r >= 2*f.extra || len(buf) == 0 {
		return nil
	}
	if r%2 == 1 {
		return wrapStep("unfold", sendTo(ctx, ep, tag, r-1, buf))
	}
	return wrapStep("unfold", recvFrom(ctx, ep, tag, r+1, buf))
}

func wrapStep(step string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", step, err)
}

// combineOrdered sets mine = lower op higher, where lower is the value of
// the lower-ranked partner: both partners compute the very same bits.
func combineOrdered(dt reduce.DType, op reduce.Op, mine, theirs []byte, iAmLower bool) {
	if iAmLower {
		reduce.Reduce3(dt, op, mine, mine, theirs)
	} else {
		reduce.Reduce3(dt, op, mine, theirs, mine)
	}
}

// rdAllReduce is recursive doubling, the latency-optimal all_reduce for
// small messages. With q the largest power of two <= p:
//
//	fold: ranks 2i send their buffer to 2i+1 (when p is not a power of two)
//	step k = 0..log2(q)-1: virtual rank v exchanges its whole buffer with
//	    v xor 2^k and sets it to (lower partner's) op (higher partner's)
//	unfold: ranks 2i+1 send the result back to 2i
//
// Bytes sent per rank: n·log2(q), plus n for the ranks folded in or out.
// Partners combine in the same order, so after step k all 2^(k+1) ranks of
// a group hold the same bits, and in the end all ranks do.
func rdAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, dst []byte, dt reduce.DType, op reduce.Op, divide bool) error {
	args.CopyUnlessSame(dst, src)
	if len(dst) == 0 {
		return nil
	}
	f := newFoldedGroup(ep.Size())
	scratch := make([]byte, len(dst))
	if err := f.foldIn(ctx, ep, tag, dst, scratch, dt, op); err != nil {
		return err
	}
	if v := f.virtual(ep.Rank()); v >= 0 {
		for k, mask := 0, 1; mask < f.q; k, mask = k+1, mask<<1 {
			peer := f.real(v ^ mask)
			if err := exchange(ctx, ep, tag, peer, dst, peer, scratch, true); err != nil {
				return fmt.Errorf("recursive doubling step %d: %w", k, err)
			}
			combineOrdered(dt, op, dst, scratch, v&mask == 0)
		}
	}
	if err := f.foldOut(ctx, ep, tag, dst); err != nil {
		return err
	}
	if divide {
		reduce.DivideBy(dt, dst, ep.Size())
	}
	return nil
}
