package intra

// tuning holds the protocol thresholds and chunk sizes. Measured on a
// 2-core VM (world 2, float32): see ALGORITHMS.md in this directory.
type tuning struct {
	// oneShotMax: AllReduce and Reduce payloads up to this many bytes, at
	// p = 2, use one-shot (every rank publishes all, reduces all) rather
	// than the reduce-scatter/all-gather pipeline; at p ranks the limit is
	// oneShotMax/(p-1), as one-shot reduces p-1 times as much.
	oneShotMax int
	// oneShotChunk: bytes per epoch of one-shot through the data halves
	// (capped by the half).
	oneShotChunk int
	// sliceBytes: bytes of each rank's slice per round of the
	// reduce-scatter/all-gather pipeline (capped by the data half).
	sliceBytes int
	// copyBytes: bytes each rank publishes per round in the copy-only
	// collectives (broadcast, all_gather, all_to_all), capped by the half.
	copyBytes int
	// singleCopyMin, singleCopyMax: AllReduceWith payloads from min to
	// max bytes, at p = 2, use the single-copy protocol where the ranks
	// agreed on it (min 0: never), rather than one-shot or the pipeline.
	// Below min one-shot's few epochs win over the system calls; beyond
	// max the buffers no longer stay in cache, and the kernel's copies,
	// paying for 4 KiB page pinning, lose to the pipeline; at p ranks the
	// limit is max*2/p (p buffers).
	singleCopyMin, singleCopyMax int
	// singleCopySlice: bytes of each rank's slice per round of the
	// single-copy protocol (the scratch buffers are that large).
	singleCopySlice int
}

func defaultTuning() tuning {
	return tuning{
		oneShotMax:   1 << 20,
		oneShotChunk: 1 << 20,
		sliceBytes:   256 << 10,
		copyBytes:    1 << 20,

		singleCopyMin:   256 << 10,
		singleCopyMax:   16 << 20,
		singleCopySlice: 256 << 10,
	}
}

// oneShotLimit is the largest one-shot payload among p ranks.
func (t tuning) oneShotLimit(p int) int { return t.oneShotMax / max(p-1, 1) }

// singleCopyLimit is the largest single-copy payload among p ranks.
func (t tuning) singleCopyLimit(p int) int { return t.singleCopyMax * 2 / max(p, 2) }

// alignDown rounds n down to a multiple of to (at least to).
func alignDown(n, to int) int { return max(n/to*to, to) }

// lineBytes: buffers carved from a data half start on cache-line
// boundaries, so that two writers never share a line and element sizes
// (all divide 64) stay aligned.
const lineBytes = 64
