package collectives

import (
	"slices"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
)

// Algorithm names an algorithm for a collective. The empty string (Auto)
// lets the library choose by message size and world size.
type Algorithm string

const (
	Auto Algorithm = ""
	// Ring: bandwidth-optimal; all_reduce as reduce-scatter + all-gather,
	// chunked and pipelined.
	Ring Algorithm = "ring"
	// RecursiveDoubling: latency-optimal for small messages (log p steps).
	RecursiveDoubling Algorithm = "rd"
	// HalvingDoubling: Rabenseifner's reduce-scatter by recursive halving,
	// then all-gather by recursive doubling.
	HalvingDoubling Algorithm = "hd"
	// Tree: binomial tree (broadcast, reduce).
	Tree Algorithm = "tree"
	// Chain: pipelined chain (large broadcast/reduce).
	Chain Algorithm = "chain"
	// Pairwise: pairwise exchange (all_to_all).
	Pairwise Algorithm = "pairwise"
	// Direct: the root exchanges one message with every other rank
	// (gather, scatter).
	Direct Algorithm = "direct"
	// Hier: the hierarchical collectives of collectives/hier, one
	// exchange across hosts; chosen by the communicator that has them.
	Hier Algorithm = "hier"
)

// DefaultChunkBytes is the pipelining unit of ring and chain algorithms
// when Options.ChunkBytes is 0. Measured with cmd/allreduce-bench: see
// ALGORITHMS.md, "Chunk size".
const DefaultChunkBytes = 512 << 10

// Options tune one collective call. The zero value is valid.
type Options struct {
	// Algo overrides the automatic choice. An algorithm that does not apply
	// to the collective is an error.
	Algo Algorithm
	// PreMul is the scalar of reduce.PreMulSum; ignored by other ops.
	PreMul float64
	// ChunkBytes is the pipelining unit of ring and chain algorithms
	// (0: the default, see DefaultChunkBytes).
	ChunkBytes int
	// RoundBytes cuts the hierarchical all_reduce across hosts
	// (collectives/hier) into rounds of about this many bytes, whose arena
	// phases overlap other rounds' inter-host phase; 0: one round. The
	// collectives of this package ignore it.
	RoundBytes int
}

// chunkBytes is the pipelining unit rounded down to whole elements of
// esize bytes (at least one element).
func (o Options) chunkBytes(esize int) int {
	c := o.ChunkBytes
	if c <= 0 {
		c = DefaultChunkBytes
	}
	return max(c/esize, 1) * esize
}

// checkOptions rejects an algorithm the collective does not implement and a
// negative chunk size.
func checkOptions(o Options, allowed ...Algorithm) error {
	if o.ChunkBytes < 0 {
		return args.Invalidf("negative chunk size %d", o.ChunkBytes)
	}
	if o.Algo != Auto && !slices.Contains(allowed, o.Algo) {
		return args.Invalidf("algorithm %q does not apply (want one of %q or auto)", o.Algo, allowed)
	}
	return nil
}
