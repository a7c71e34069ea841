package collectives

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
	// Tree: binomial tree (broadcast, reduce, gather, scatter, barrier).
	Tree Algorithm = "tree"
	// Chain: pipelined chain (large broadcast/reduce).
	Chain Algorithm = "chain"
	// Pairwise: pairwise exchange (all_to_all).
	Pairwise Algorithm = "pairwise"
)

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
}
