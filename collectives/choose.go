package collectives

// Automatic algorithm choice. It depends only on the world size and the
// message size, never on anything rank-local, and uses integer arithmetic
// only, so every rank of a communicator, on any architecture, chooses the
// same algorithm (and so gets the same bits).

// The all_reduce cost model (see ALGORITHMS.md, "Choosing"): a message
// costs alpha plus beta per byte, a reduction gamma per byte. Fitted on a
// 2-vCPU host, ranks over loopback TCP and in-process (medians of
// interleaved runs); they only need to get the crossovers roughly right.
const (
	alphaNs          = 15000 // per message: mostly waking the receiver
	betaPicoPerByte  = 1000  // per byte sent (copies + wire): ~1 GB/s
	gammaPicoPerByte = 1000  // per byte reduced
)

// ChooseAllReduce is the algorithm AllReduce uses under Auto for a world of
// size ranks and a buffer of nbytes bytes: the cheapest of recursive
// doubling, halving-doubling and ring under the cost model. In practice:
// recursive doubling for small buffers (up to ~15-30 KiB at 2-8 ranks,
// ~5 KiB at non-powers of two), halving-doubling for medium ones at
// power-of-two worlds of 4 or more ranks, ring above (always from 64 KiB
// at 4 ranks, ~130 KiB at 8).
func ChooseAllReduce(size, nbytes int) Algorithm {
	if size <= 1 {
		return Ring
	}
	best, cost := Ring, ringCost(size, nbytes)
	if c := hdCost(size, nbytes); c < cost {
		best, cost = HalvingDoubling, c
	}
	if c := rdCost(size, nbytes); c < cost {
		best = RecursiveDoubling
	}
	return best
}

// The costs are in picoseconds, in int64: 2^63 ps is 106 days.

// msg is the cost of messages carrying bytes in total.
func msg(count int, bytes int64) int64 {
	return int64(count)*alphaNs*1000 + bytes*betaPicoPerByte
}

func red(bytes int64) int64 { return bytes * gammaPicoPerByte }

// foldCost is what recursive doubling and halving-doubling add for a world
// that is not a power of two: the pairs' fold in (send, reduce) and out.
func foldCost(f foldedGroup, n int64) int64 {
	if f.extra == 0 {
		return 0
	}
	return msg(2, 2*n) + red(n)
}

func rdCost(p, nbytes int) int64 {
	f, n := newFoldedGroup(p), int64(nbytes)
	steps := log2(f.q)
	return foldCost(f, n) + msg(steps, int64(steps)*n) + red(int64(steps)*n)
}

func hdCost(p, nbytes int) int64 {
	f, n := newFoldedGroup(p), int64(nbytes)
	q := int64(f.q)
	return foldCost(f, n) + msg(2*log2(f.q), 2*(q-1)*n/q) + red((q-1)*n/q)
}

// ringCost: the pipeline (from pipelineMinBytes received) hides the
// reductions behind the transfers.
func ringCost(p, nbytes int) int64 {
	n, pp := int64(nbytes), int64(p)
	cost := msg(2*(p-1), 2*(pp-1)*n/pp)
	if 2*(pp-1)*n/pp < pipelineMinBytes {
		cost += red((pp - 1) * n / pp)
	}
	return cost
}

func log2(q int) int {
	k := 0
	for ; q > 1; q >>= 1 {
		k++
	}
	return k
}

// chooseBroadcast compares the binomial tree, whose critical path is
// root's ceil(log2 p) sends of n bytes, with the pipelined chain: p-2
// steps of one chunk to fill the pipe, then n bytes in n/chunk messages
// (counted fractionally, so the choice flips once as n grows). The chain
// wins once the buffer spans a few chunks: from ~1.3 MiB at 4 ranks and
// ~1.8 MiB at 8 with 512 KiB chunks; never at 2 ranks.
func chooseBroadcast(size, nbytes, chunk int) Algorithm {
	n := int64(nbytes)
	tree := int64(ceilLog2(size)) * msg(1, n)
	if chainCost(size, nbytes, chunk, 0) < tree {
		return Chain
	}
	return Tree
}

// chooseReduce is chooseBroadcast with reductions: the tree reduces each
// message whole after it arrived; in the chain each rank of the pipe's
// fill reduces a chunk before forwarding it, then the reduction of a chunk
// overlaps the transfer of the next, so only the last chunk's shows.
func chooseReduce(size, nbytes, chunk int) Algorithm {
	n, c := int64(nbytes), int64(min(nbytes, chunk))
	tree := int64(ceilLog2(size)) * (msg(1, n) + red(n))
	if chainCost(size, nbytes, chunk, red(c))+red(c) < tree {
		return Chain
	}
	return Tree
}

// chainCost is the time of a pipelined chain over size ranks: size-2
// steps of one chunk (each with perStep extra work) to fill the pipe, then
// the n bytes in n/chunk messages.
func chainCost(size, nbytes, chunk int, perStep int64) int64 {
	n, c := int64(nbytes), int64(min(nbytes, chunk))
	fill := int64(size-2) * (msg(1, c) + perStep)
	msgs := max(alphaNs*1000, alphaNs*1000*n/int64(chunk)) // n/chunk messages, at least one
	return fill + msgs + n*betaPicoPerByte
}

func ceilLog2(p int) int {
	k := log2(p)
	if 1<<k < p {
		k++
	}
	return k
}
