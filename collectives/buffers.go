package collectives

// How a buffer splits into the per-rank blocks that ring algorithms move
// (aliasing checks are in collectives/internal/args).

// blocks is a partition of a buffer into one contiguous block per rank.
type blocks struct {
	off, size []int // bytes
}

func (b blocks) of(buf []byte, i int) []byte {
	return buf[b.off[i] : b.off[i]+b.size[i]]
}

// evenBlocks splits n elements of esize bytes over p ranks: the first n%p
// blocks get one element more than the others.
func evenBlocks(n, esize, p int) blocks {
	counts := make([]int, p)
	for i := range counts {
		counts[i] = n / p
		if i < n%p {
			counts[i]++
		}
	}
	return countBlocks(counts, esize)
}

// countBlocks lays out blocks of counts[i] elements of esize bytes.
func countBlocks(counts []int, esize int) blocks {
	b := blocks{off: make([]int, len(counts)), size: make([]int, len(counts))}
	off := 0
	for i, c := range counts {
		b.off[i], b.size[i] = off, c*esize
		off += c * esize
	}
	return b
}

// numChunks is the number of pieces of at most chunk bytes (a multiple of
// the element size) that a block of n bytes is cut into; chunkOf is piece k.
func numChunks(n, chunk int) int {
	return (n + chunk - 1) / chunk
}

func chunkOf(buf []byte, k, chunk int) []byte {
	lo := k * chunk
	return buf[lo:min(len(buf), lo+chunk)]
}

// mod returns x modulo p in [0, p).
func mod(x, p int) int {
	return ((x % p) + p) % p
}

// sum adds up xs.
func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
