// Package collectives implements the collective algorithms of hccl-go over
// transport.Endpoint links: all_reduce, broadcast, reduce, all_gather(v),
// reduce_scatter(v), all_to_all(v), gather, scatter and barrier.
//
// Every rank of a communicator calls the same function with the same tag,
// buffer sizes and Options. All the messages of one call travel under that
// one tag; since a transport keeps messages FIFO per (peer, tag), each
// algorithm posts its receives from a peer in exactly the order that peer
// sends to it. Zero-length blocks are never sent: both sides know the sizes.
//
// Results are deterministic: for a given world size, message size and
// Options, every rank ends with bitwise identical results, run after run.
// Ring and halving-doubling reduce each element once along a fixed path and
// then copy it; recursive doubling combines partial results as
// (lower ranks' value) op (higher ranks' value) on both partners. The
// automatic algorithm choice depends only on the world size and the message
// size, so all ranks choose alike.
//
// Errors name the collective and the rank ("allreduce rank 2: ..."), wrap
// ErrInvalidArgument for bad arguments, and keep the transport's
// *transport.PeerError and the context's error reachable through errors.As
// and errors.Is.
//
// ALGORITHMS.md describes every algorithm with its steps and the bytes each
// rank puts on the wire.
package collectives
