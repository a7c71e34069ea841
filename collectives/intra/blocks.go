package intra

import "github.com/hccl-go/hccl-go/collectives/internal/args"

// blocks is a partition of a buffer into one contiguous block per rank, in
// rank order: the layout of reduce_scatter's input and all_gather's output.
type blocks struct {
	off, size []int // bytes
}

// evenBlocks is p blocks of m bytes each.
func evenBlocks(p, m int) blocks {
	b := blocks{off: make([]int, p), size: make([]int, p)}
	for j := range p {
		b.off[j], b.size[j] = j*m, m
	}
	return b
}

// countBlocks lays out p blocks of counts[j] elements of es bytes.
func countBlocks(counts []int, p, es int) (blocks, error) {
	if len(counts) != p {
		return blocks{}, args.Invalidf("%d counts for %d ranks", len(counts), p)
	}
	b := blocks{off: make([]int, p), size: make([]int, p)}
	off := 0
	for j, c := range counts {
		if c < 0 {
			return blocks{}, args.Invalidf("counts[%d] = %d is negative", j, c)
		}
		b.off[j], b.size[j] = off, c*es
		off += c * es
	}
	return b, nil
}

// of is block j of buf.
func (b blocks) of(buf []byte, j int) []byte { return buf[b.off[j] : b.off[j]+b.size[j]] }

// total is the bytes of all blocks.
func (b blocks) total() int {
	if len(b.off) == 0 {
		return 0
	}
	last := len(b.off) - 1
	return b.off[last] + b.size[last]
}

// longest is the size of the largest block: chunk loops run until it ends.
func (b blocks) longest() int {
	m := 0
	for _, s := range b.size {
		m = max(m, s)
	}
	return m
}

// chunk is the length of block j's chunk at off when chunks are at most
// slot bytes: 0 past the end of the block.
func (b blocks) chunk(j, off, slot int) int {
	return max(0, min(slot, b.size[j]-off))
}
