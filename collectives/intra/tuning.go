package intra

import "math"

// tuning holds the protocol thresholds and chunk sizes. Measured on a
// 2-core VM (world 2, float32): see ALGORITHMS.md in this directory.
type tuning struct {
	// oneShotMax: AllReduce and Reduce payloads up to this many bytes, at
	// p = 2, use one-shot (every rank publishes all, reduces all) rather
	// than the reduce-scatter/all-gather pipeline; at p ranks the limit is
	// oneShotMax/(p-1), as one-shot reduces p-1 times as much. 256 KiB,
	// with the pipeline's 512 KiB slices, jobs interleaved and compared
	// over the VM's fast cross-CPU state (through torch): at 512 KiB the
	// pipeline took 58-73 µs against one-shot's 82-108, at 256 KiB 48-63
	// against 46-62; at 1 MiB one-shot's working set (4 MiB a rank)
	// outgrows the L2 caches.
	oneShotMax int
	// oneShotChunk: bytes per epoch of one-shot through the data halves
	// (capped by the half).
	oneShotChunk int
	// sliceBytes: bytes of each rank's slice per round of reduce_scatter,
	// and of the all_reduce/reduce pipeline unless pipelineSlice is set
	// (capped by the data half).
	sliceBytes int
	// pipelineSlice: bytes of each rank's slice per round of the all_reduce
	// and reduce pipeline (rsag.go) at p = 2, when > 0; at p ranks
	// pipelineSlice*2/p, so that a round's window of p slices stays 1 MiB
	// (p = 8: 128 KiB). At p = 2, 512 KiB against 128 KiB, jobs
	// interleaved and compared over the VM's fast cross-CPU state (through
	// torch, in place): 1 MiB 60-77 against 119-145 µs, 4 MiB 233-272
	// against 472-658, 16 MiB 1.5-2.6 against 2.7-3.3 ms, 64 MiB 7.4-8.7
	// against 10.4-10.7 ms; 1 MiB slices lost from 2 MiB on (the p+1
	// slots of a half then outgrow the caches).
	pipelineSlice int
	// copyBytes: bytes each rank publishes per round in the copy-only
	// collectives (broadcast, all_gather, all_to_all), capped by the half.
	copyBytes int
	// singleCopyMin, singleCopyMax: AllReduceWith payloads from min to
	// max bytes, at p = 2, use the single-copy protocol where the ranks
	// agreed on it (min 0: never), rather than one-shot or the pipeline.
	// Below min one-shot's few epochs win over the system calls; beyond
	// max the pipeline wins (since it touches 4 bytes per byte, not 4.5,
	// from 2 MiB: through torch 2 MiB 0.38-0.43 against 0.45-0.48 ms, 16
	// MiB 2.3-2.8 against 2.7-2.9 ms), as the kernel's copies pay for 4 KiB
	// page pinning; at p ranks the limit is max*2/p (p buffers).
	singleCopyMin, singleCopyMax int
	// singleCopySlice: bytes of each rank's slice per round of the
	// single-copy protocol (the scratch buffers are that large).
	singleCopySlice int
	// singleCopyGatherMin, singleCopyGatherMax: all_gathers of min to max
	// bytes of recv read the peers' blocks in place where the ranks agreed
	// on single-copy (min 0: never). Through torch at world 2 on the 2-core
	// VM, staged against single-copy, two jobs each: 1 MiB 49-59 against
	// 84-91 µs, 4 MiB 496-565 against 320-372, 8 MiB 954-1008 against
	// 598-752, 12 MiB 1.4 against 1.1-1.5 ms, 16 MiB 1.9 against 1.7-2.4,
	// 32 MiB 2.5-4.3 against 3.5-4.7 ms, 128 MiB 10-17 against 19-21 ms
	// (bench/results/2026-12-07/singlecopy-gather): below, the staged
	// copies stay in cache; above, the kernel's whole-block copies do not.
	singleCopyGatherMin, singleCopyGatherMax int
	// singleCopyAllToAllMin, singleCopyAllToAllMax: even all_to_alls of
	// min to max bytes of recv read the peers' blocks in place where the
	// ranks agreed on single-copy (all_gather's agreement; min 0: never).
	// The staged exchange moves every peer byte twice through memory (into
	// the arena, out of it), so the kernel's one copy wins warm from 32 KiB
	// on: through torch at world 2 on the 2-core VM, staged against
	// single-copy, 64 KiB 10.5 against 8.1 µs, 256 KiB 20.3 against 13.2,
	// 1 MiB 100 against 56, 4 MiB 397 against 307, 16 MiB 1.54 against
	// 1.17 ms, 256 MiB 42.3 against 40.3 ms. But its three epochs cost
	// more after a pause: one op after 10 ms idle took 118-138 against
	// 133-173 µs at 256 KiB and 189-203 against 221-257 at 1 MiB, while
	// at 2 MiB it still won after every condition of bench --history
	// (small ops, idle 1-100 ms, compute: 261-263 against 299-310 after
	// 10 ms idle). From 1 MiB, single-copy wins after small ops, 1 ms
	// idle and compute and loses only after 10 ms idle
	// (bench/results/2026-12-08/alltoall-single-copy).
	singleCopyAllToAllMin, singleCopyAllToAllMax int
}

func defaultTuning() tuning {
	return tuning{
		oneShotMax:    256 << 10,
		oneShotChunk:  1 << 20,
		sliceBytes:    256 << 10,
		pipelineSlice: 512 << 10,
		copyBytes:     1 << 20,

		singleCopyMin:   256 << 10,
		singleCopyMax:   1 << 20,
		singleCopySlice: 256 << 10,

		singleCopyGatherMin: 4 << 20,
		singleCopyGatherMax: 8 << 20,

		singleCopyAllToAllMin: 1 << 20,
		singleCopyAllToAllMax: math.MaxInt,
	}
}

// oneShotLimit is the largest one-shot payload among p ranks.
func (t tuning) oneShotLimit(p int) int { return t.oneShotMax / max(p-1, 1) }

// rsagSlice is the slice of the all_reduce/reduce pipeline among p ranks.
func (t tuning) rsagSlice(p int) int {
	if t.pipelineSlice > 0 {
		return max(t.pipelineSlice*2/max(p, 2), lineBytes)
	}
	return t.sliceBytes
}

// singleCopyLimit is the largest single-copy payload among p ranks.
func (t tuning) singleCopyLimit(p int) int { return t.singleCopyMax * 2 / max(p, 2) }

// alignDown rounds n down to a multiple of to (at least to).
func alignDown(n, to int) int { return max(n/to*to, to) }

// lineBytes: buffers carved from a data half start on cache-line
// boundaries, so that two writers never share a line and element sizes
// (all divide 64) stay aligned.
const lineBytes = 64
