package collectives

// Automatic algorithm choice. It depends only on the world size and the
// message size, never on anything rank-local, so every rank of a
// communicator chooses the same algorithm (and so gets the same bits).
// The thresholds come from measurements described in ALGORITHMS.md.

const (
	// rdMaxBytes: all_reduce up to this size uses recursive doubling.
	rdMaxBytes = 64 << 10
	// treeBroadcastMaxBytes: broadcast up to this size uses a binomial
	// tree, above it a pipelined chain.
	treeBroadcastMaxBytes = 64 << 10
	// treeReduceMaxBytes: reduce up to this size uses a binomial tree,
	// above it a pipelined chain.
	treeReduceMaxBytes = 64 << 10
)

// ChooseAllReduce is the algorithm AllReduce uses under Auto for a world of
// size ranks and a buffer of nbytes bytes.
func ChooseAllReduce(size, nbytes int) Algorithm {
	if size > 1 && nbytes <= rdMaxBytes {
		return RecursiveDoubling
	}
	return Ring
}

func chooseBroadcast(size, nbytes int) Algorithm {
	if nbytes <= treeBroadcastMaxBytes {
		return Tree
	}
	return Chain
}

func chooseReduce(size, nbytes int) Algorithm {
	if nbytes <= treeReduceMaxBytes {
		return Tree
	}
	return Chain
}
