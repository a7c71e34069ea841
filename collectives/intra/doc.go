// Package intra implements collectives among the ranks of a communicator
// that share one host (all of its ranks, or, across hosts, the intra-host
// phases of collectives/hier), over a transport/arena shared-memory segment
// instead of a point-to-point transport: a rank reads its peers' data where they
// published it, so a payload byte is copied into shared memory once and out
// once, and the shared chunks stay in cache. AllReduceWith can also skip
// shared memory for mid-sized payloads: with a SingleCopy state, ranks read
// each other's private buffers with process_vm_readv where the kernel
// allows it (singlecopy.go).
//
// Every function mirrors its counterpart in package collectives (Go slices
// in and out, the same argument rules and in-place conventions, errors
// wrapping collectives.ErrInvalidArgument for usage errors), with the
// arena in place of the endpoint and tag: ranks are the arena's local
// indices (a.Index()), and every rank must call the same collectives with
// the same sizes and the same seq (the op's sequence number, as the tag of
// the message path) in the same order.
//
// Calls that break that rule are caught (stamp.go): the first epoch of
// every call carries a stamp of it (collective, seq, bytes, dtype, reduce
// op, root), checked against every peer's before any peer data is read.
// If the ranks differ, every rank fails the call with an error wrapping
// ErrMismatch (and collectives.ErrInvalidArgument) that names the first
// differing peer, e.g. "allreduce rank 0 seq 7: ...: rank 1 has 32 bytes,
// this rank 16"; no rank uses a peer's data, and the arena stays usable.
// All_to_all counts are checked pairwise in the same epoch. Empty calls
// take part too (one epoch), so that empty against non-empty is caught.
//
// All results are bitwise identical on every rank: each element is reduced
// either by one rank, which publishes the result, or by all ranks in the
// same order 0..p-1.
//
// A failure part-way (a dead peer, a cancelled context) leaves the ranks
// out of step; the arena then refuses further operations (arena.ErrBroken).
// Argument errors are detected before anything is shared and leave it
// usable; they are local, so the peers of a rank that refused its
// arguments wait for it until their context ends (and then break it).
//
// Code outside Go may run a blocking collective's protocol itself, epoch
// for epoch (export/lane.c: all_reduce and reduce one-shot or as the
// reduce-scatter/all-gather pipeline; broadcast, all_gather and
// reduce_scatter chunk by chunk; barrier), and hand it to Go part-way:
// lane.go and lane_ops.go hold the entry points (LaneLimit, LanePipeline,
// LaneMoveChunk, LaneScatterSlot and the FinishLane functions).
//
// ALGORITHMS.md lists each protocol with the bytes it touches per payload
// byte, the thresholds between protocols, and measured figures.
package intra
