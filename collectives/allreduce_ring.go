package collectives

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// ringAllReduce is the bandwidth-optimal all_reduce: a ring reduce-scatter
// followed by a ring all-gather, over p blocks of the buffer, each cut into
// chunks of at most chunk bytes and pipelined.
//
// Rank r sends to r+1 and receives from r-1. With blocks B[0..p-1]:
//
//	reduce-scatter, step s = 0..p-2: send B[r-s], receive B[r-s-1] and
//	    reduce it into recv as (partial received) op (own input).
//	    After it, rank r holds B[r+1] fully reduced (divided, for Avg).
//	all-gather, step t = 0..p-2: send B[r+1-t], receive B[r-t] into recv.
//
// Each rank sends and receives 2(p-1)/p·n bytes. Every block is reduced
// once, along the same path, and then copied: all ranks agree bitwise.
//
// Pipelining: a send of step g forwards the chunk received at step g-1, so
// it waits only for that chunk, not for the whole block. An all-gather
// receive into B[r-t] waits for the reduce-scatter sends of step t, which
// read B[r-t] (in place, from recv itself).
func ringAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, dst []byte, dt reduce.DType, op reduce.Op, divide bool, chunk int) error {
	p, r := ep.Size(), ep.Rank()
	es := dt.Size()
	bl := evenBlocks(len(dst)/es, es, p)
	right, left := mod(r+1, p), mod(r-1, p)
	landing := make([]byte, min(chunk, bl.size[0])) // block 0 is the largest

	pl := &pipeline{ep: ep, tag: tag, name: "ring", dt: dt, op: op, divisor: p, window: ringWindow}
	steps := 2 * (p - 1)
	firstRecv := make([]int, steps)   // index of the first receive of step g
	sendsBefore := make([]int, steps) // sends issued before step g
	for g := range steps {
		sb, rb := mod(r-g, p), mod(r-g-1, p) // reduce-scatter
		if g >= p-1 {
			t := g - (p - 1)
			sb, rb = mod(r+1-t, p), mod(r-t, p) // all-gather
		}

		sendsBefore[g] = len(pl.sends)
		from := dst
		if g == 0 {
			from = src
		}
		out := bl.of(from, sb)
		for k := range numChunks(len(out), chunk) {
			after := 0
			if g > 0 {
				after = firstRecv[g-1] + k + 1
			}
			pl.addSend(right, g, chunkOf(out, k, chunk), after)
		}

		firstRecv[g] = len(pl.recvs)
		in := bl.of(dst, rb)
		for k := range numChunks(len(in), chunk) {
			c := chunkOf(in, k, chunk)
			if g < p-1 {
				pl.addRecv(recvItem{
					peer: left, step: g, buf: landing[:len(c)],
					into: c, with: chunkOf(bl.of(src, rb), k, chunk),
					divide: divide && g == p-2,
				})
			} else {
				// B[r-t] was read by the reduce-scatter sends of step t.
				t := g - (p - 1)
				pl.addRecv(recvItem{peer: left, step: g, buf: c, after: sendsBefore[t] + numChunks(len(in), chunk)})
			}
		}
	}
	return pl.run(ctx)
}
