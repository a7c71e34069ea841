package intra

// tuning holds the protocol thresholds and chunk sizes. Measured on a
// 2-core VM (world 2, float32): see ALGORITHMS.md in this directory.
type tuning struct {
	// oneShotMax: AllReduce and Reduce payloads up to this many bytes use
	// one-shot (every rank publishes all, reduces all) rather than the
	// reduce-scatter/all-gather pipeline.
	oneShotMax int
	// sliceBytes: bytes of each rank's slice per round of the
	// reduce-scatter/all-gather pipeline (capped by the data half).
	sliceBytes int
	// copyBytes: bytes each rank publishes per round in the copy-only
	// collectives (broadcast, all_gather, all_to_all), capped by the half.
	copyBytes int
}

func defaultTuning() tuning {
	return tuning{
		oneShotMax: 64 << 10,
		sliceBytes: 256 << 10,
		copyBytes:  1 << 20,
	}
}

// alignDown rounds n down to a multiple of to (at least to).
func alignDown(n, to int) int { return max(n/to*to, to) }

// lineBytes: buffers carved from a data half start on cache-line
// boundaries, so that two writers never share a line and element sizes
// (all divide 64) stay aligned.
const lineBytes = 64
