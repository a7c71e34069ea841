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
//	    v xor mask split their common range at its middle element; the
//	    lower rank keeps the lower half. Each sends the half it gives up,
//	    receives the partner's copy of the half it keeps and reduces it as
//	    (lower partner's) op (higher partner's).
//	    After it, v holds its final range, one q-th of the buffer, fully
//	    reduced (divided, for Avg).
//	doubling, the same steps in reverse: send the range held, receive the
//	    partner's range next to it, straight into recv.
//
// Bytes sent per rank: 2(q-1)/q·n, plus n for ranks folded in or out; the
// latency is 2·log2(q) steps against ring's 2(p-1). Each element is reduced
// once along a fixed path and then copied, so all ranks agree bitwise.
//
// Two schedules, by the size of the final ranges:
//
//   - below one chunk each (latency-bound): hdStepwise, one message per
//     peer per step, each step after the previous one;
//   - from one chunk: hdSchedule, a pipeline of messages of at most
//     chunkBytes. A step's reductions are done as its messages land, and
//     its sends go out as soon as the data they carry is final, while the
//     previous step still receives from another peer (a link each, on a
//     network where they are separate links). For that a step's messages
//     travel, final range by final range, in the order in which the
//     receiver passes the data on (halvingOrder, doublingOrder), so that
//     the first message of a step carries what the first message of the
//     next step needs.
func hdAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, dst []byte, dt reduce.DType, op reduce.Op, divide bool, chunkBytes int) error {
	args.CopyUnlessSame(dst, src)
	if len(dst) == 0 {
		return nil
	}
	f := newFoldedGroup(ep.Size())
	var foldScratch []byte // only the odd rank of a folded pair receives
	if r := ep.Rank(); r < 2*f.extra && r%2 == 1 {
		foldScratch = make([]byte, len(dst))
	}
	if err := f.foldIn(ctx, ep, tag, dst, foldScratch, dt, op); err != nil {
		return err
	}
	if v := f.virtual(ep.Rank()); v >= 0 {
		var err error
		if chunk := max(1, chunkBytes/dt.Size()); len(dst)/dt.Size()/f.q < chunk {
			err = hdStepwise(ctx, ep, tag, f, v, dst, dt, op, divide)
		} else {
			err = hdSchedule(ep, tag, f, v, dst, dt, op, divide, chunk).run(ctx)
		}
		if err != nil {
			return err
		}
	}
	return f.foldOut(ctx, ep, tag, dst)
}

// elemRange is a range [lo, hi) of elements.
type elemRange struct{ lo, hi int }

func (e elemRange) of(buf []byte, es int) []byte { return buf[e.lo*es : e.hi*es] }

// hdTree is the halving tree of q virtual ranks over n elements.
type hdTree struct{ q, steps, n int }

func newHDTree(q, n int) hdTree {
	steps := 0
	for 1<<steps < q {
		steps++
	}
	return hdTree{q: q, steps: steps, n: n}
}

// halvingMask is the partner bit of halving step k (doubling step
// steps-1-k uses the same one).
func (t hdTree) halvingMask(k int) int { return t.q >> (k + 1) }

// held is v's range after k halving steps (k = 0: the whole buffer).
func (t hdTree) held(v, k int) elemRange {
	r := elemRange{0, t.n}
	for s := range k {
		mid := r.lo + (r.hi-r.lo)/2
		if v&t.halvingMask(s) == 0 {
			r.hi = mid
		} else {
			r.lo = mid
		}
	}
	return r
}

// give is what v gives up at halving step k: what its partner keeps.
func (t hdTree) give(v, k int) elemRange { return t.held(v^t.halvingMask(k), k+1) }

// halvingOrder appends to parts the order in which v receives what it
// keeps at halving step k, final range by final range: first what it
// gives up at step k+1, in the order in which that partner receives it
// (the same rule, recursively), then what it gives up at step k+2, and so
// on; its own final range last.
func (t hdTree) halvingOrder(parts []elemRange, v, k int) []elemRange {
	for s := k + 1; s < t.steps; s++ {
		parts = t.halvingOrder(parts, v^t.halvingMask(s), s)
	}
	return append(parts, t.held(v, t.steps))
}

// doublingOrder appends to parts the order in which v sends what it holds
// at doubling step j: its final range, then what each earlier doubling
// step brought, in the order it arrived.
func (t hdTree) doublingOrder(parts []elemRange, v, j int) []elemRange {
	parts = append(parts, t.held(v, t.steps))
	for i := range j {
		parts = t.doublingOrder(parts, v^t.halvingMask(t.steps-1-i), i)
	}
	return parts
}

// messages appends to out the non-empty messages of at most chunk
// elements each that carry parts, in order.
func messages(out, parts []elemRange, chunk int) []elemRange {
	for _, p := range parts {
		for lo := p.lo; lo < p.hi; lo += chunk {
			out = append(out, elemRange{lo, min(lo+chunk, p.hi)})
		}
	}
	return out
}

// hdSchedule is virtual rank v's halving-doubling as a pipeline of
// messages of at most chunk elements. A send waits for the receives that
// wrote what it reads; a doubling receive waits for the halving sends that
// read the range it overwrites.
func hdSchedule(ep transport.Endpoint, tag transport.Tag, f foldedGroup, v int, dst []byte, dt reduce.DType, op reduce.Op, divide bool, chunk int) *pipeline {
	es := dt.Size()
	t := newHDTree(f.q, len(dst)/es)
	// Messages per phase: parts are final ranges, each of one chunk or
	// more, so at most two messages per chunk.
	perPhase := 2*t.n/chunk + t.q
	pl := &pipeline{ep: ep, tag: tag, name: "halving-doubling", dt: dt, op: op, divisor: ep.Size(),
		sends: make([]sendItem, 0, 2*perPhase), recvs: make([]recvItem, 0, 2*perPhase)}
	// Every message is one chunk of one final range, cut from the range's
	// start at every step, so two messages that overlap are the same
	// message: the dependencies are looked up by a message's first element.
	wrote := make(map[int]int, 2*perPhase) // receives done before the data is there
	read := make(map[int]int, perPhase)    // halving sends done before it may be overwritten
	parts := make([]elemRange, 0, t.q/2)
	msgs := make([]elemRange, 0, 2*t.n/chunk+t.q)
	scratch := make([]byte, min(chunk, t.n)*es)
	for k := range t.steps {
		w := v ^ t.halvingMask(k)
		peer := f.real(w)
		msgs = messages(msgs[:0], t.halvingOrder(parts[:0], w, k), chunk)
		for _, m := range msgs {
			pl.addSend(peer, k, m.of(dst, es), wrote[m.lo])
			read[m.lo] = len(pl.sends)
		}
		msgs = messages(msgs[:0], t.halvingOrder(parts[:0], v, k), chunk)
		for _, m := range msgs {
			mine := m.of(dst, es)
			pl.addRecv(recvItem{peer: peer, step: k, buf: scratch[:len(mine)], into: mine, with: mine,
				withFirst: v < w, divide: divide && k == t.steps-1})
			wrote[m.lo] = len(pl.recvs)
		}
	}
	for j := range t.steps {
		w := v ^ t.halvingMask(t.steps-1-j)
		peer := f.real(w)
		msgs = messages(msgs[:0], t.doublingOrder(parts[:0], v, j), chunk)
		for _, m := range msgs {
			pl.addSend(peer, t.steps+j, m.of(dst, es), wrote[m.lo])
		}
		msgs = messages(msgs[:0], t.doublingOrder(parts[:0], w, j), chunk)
		for _, m := range msgs {
			pl.addRecv(recvItem{peer: peer, step: t.steps + j, buf: m.of(dst, es), after: read[m.lo]})
			wrote[m.lo] = len(pl.recvs)
		}
	}
	return pl
}

// hdStepwise is virtual rank v's halving-doubling one step after the
// other, one message per step.
func hdStepwise(ctx context.Context, ep transport.Endpoint, tag transport.Tag, f foldedGroup, v int, dst []byte, dt reduce.DType, op reduce.Op, divide bool) error {
	es := dt.Size()
	t := newHDTree(f.q, len(dst)/es)
	scratch := make([]byte, (t.n-t.n/2)*es) // the larger half
	for k := range t.steps {
		w := v ^ t.halvingMask(k)
		keep := t.held(v, k+1)
		in := scratch[:(keep.hi-keep.lo)*es]
		if err := exchange(ctx, ep, tag, f.real(w), t.give(v, k).of(dst, es), f.real(w), in, true); err != nil {
			return fmt.Errorf("halving step %d: %w", k, err)
		}
		combineOrdered(dt, op, keep.of(dst, es), in, v < w)
	}
	if divide {
		reduce.DivideBy(dt, t.held(v, t.steps).of(dst, es), ep.Size())
	}
	for j := range t.steps {
		// v holds what it held before halving step steps-j; its partner
		// holds exactly what v gave up at that step.
		peer := f.real(v ^ t.halvingMask(t.steps-1-j))
		held, want := t.held(v, t.steps-j), t.give(v, t.steps-1-j)
		if err := exchange(ctx, ep, tag, peer, held.of(dst, es), peer, want.of(dst, es), true); err != nil {
			return fmt.Errorf("doubling step %d: %w", j, err)
		}
	}
	return nil
}
