package collectives

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// hdAllReduce is Rabenseifner's all_reduce: a reduce-scatter by recursive
// halving, then an all-gather by recursive doubling. With q the largest
// power of two <= p (extra ranks folded in and out as in rdAllReduce) and
// the buffer's n elements:
//
//	halving, k = 0..log2(q)-1, mask = q/2^(k+1): virtual rank v and
//	    v xor mask split their common range [lo, hi) at its middle element;
//	    the lower rank keeps the lower half. Each sends the half it gives
//	    up, receives the partner's copy of the half it keeps and reduces it
//	    as (lower partner's) op (higher partner's).
//	    After it, v holds one q-th of the buffer fully reduced (divided,
//	    for Avg).
//	doubling, the same steps in reverse: send the range held, receive the
//	    partner's range next to it, straight into recv.
//
// Bytes sent per rank: 2(q-1)/q·n, plus n for ranks folded in or out; the
// latency is 2·log2(q) steps against ring's 2(p-1). Each element is reduced
// once along a fixed path and then copied, so all ranks agree bitwise.
func hdAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, dst []byte, dt reduce.DType, op reduce.Op, divide bool) error {
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
		if err := hdVirtual(ctx, ep, tag, f, v, dst, scratch, dt, op, divide); err != nil {
			return err
		}
	}
	return f.foldOut(ctx, ep, tag, dst)
}

// elemRange is a range [lo, hi) of elements.
type elemRange struct{ lo, hi int }

func (e elemRange) of(buf []byte, es int) []byte { return buf[e.lo*es : e.hi*es] }

func hdVirtual(ctx context.Context, ep transport.Endpoint, tag transport.Tag, f foldedGroup, v int, dst, scratch []byte, dt reduce.DType, op reduce.Op, divide bool) error {
	es := dt.Size()
	held := elemRange{0, len(dst) / es}
	var given []elemRange // the half given up at each halving step
	for k, mask := 0, f.q/2; mask > 0; k, mask = k+1, mask/2 {
		peer := f.real(v ^ mask)
		mid := held.lo + (held.hi-held.lo)/2
		keep, give := elemRange{held.lo, mid}, elemRange{mid, held.hi}
		lower := v&mask == 0
		if !lower {
			keep, give = give, keep
		}
		in := scratch[:(keep.hi-keep.lo)*es]
		if err := exchange(ctx, ep, tag, peer, give.of(dst, es), peer, in, true); err != nil {
			return fmt.Errorf("halving step %d: %w", k, err)
		}
		combineOrdered(dt, op, keep.of(dst, es), in, lower)
		given = append(given, give)
		held = keep
	}
	if divide {
		reduce.DivideBy(dt, held.of(dst, es), ep.Size())
	}
	for k, mask := 0, 1; mask < f.q; k, mask = k+1, mask*2 {
		peer := f.real(v ^ mask)
		want := given[len(given)-1-k] // the partner holds exactly this range
		if err := exchange(ctx, ep, tag, peer, held.of(dst, es), peer, want.of(dst, es), true); err != nil {
			return fmt.Errorf("doubling step %d: %w", k, err)
		}
		held = elemRange{min(held.lo, want.lo), max(held.hi, want.hi)}
	}
	return nil
}
