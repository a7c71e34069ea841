// Package arena is the shared-memory segment that the ranks of one host use
// for collectives: each rank owns one segment in /dev/shm and maps those of
// all its local peers, so a collective reads the peers' data where they put
// it instead of sending it through a message pipe.
//
// An Arena is not a point-to-point transport. It offers what a shared-memory
// collective needs and nothing more:
//
//   - epochs: every step of every collective gets the next epoch number,
//     identical on all ranks because they run the same steps in the same
//     order; a rank announces "my data for epoch e is ready" with Post and
//     waits for its peers' announcements with Wait/WaitAll;
//   - two kinds of buffers per rank and epoch parity: a small inline slot
//     whose sequence flag shares the first cache line with the operation's
//     stamp and the data (a tiny payload travels as one cache line), and a
//     data half for bulk chunks;
//   - waits that spin, then yield, then sleep on a futex, and that notice a
//     dead or closed peer, a closed arena and the end of a context.
//
// # The parity rule
//
// Buffers come in two parities, e%2. A rank writes its buffers of epoch e,
// posts e, waits until all peers posted e, and then reads the peers' buffers
// of epoch e until it posts e+1. So when a rank writes parity e%2 again, at
// epoch e+2, every peer has posted e+1: all of them finished reading epoch e.
// Collectives built on an Arena must keep that discipline: read a peer's
// epoch-e buffers only between WaitAll(e) and the next Post, and write its
// own epoch-e buffers only after WaitAll(e-1) returned. (A rank may write
// its epoch e+1 buffers while still reading epoch e: all peers have posted
// e, so they are done with epoch e-1, which has the same parity.)
//
// # Stamps
//
// Ranks that call different operations, or the same one with different
// sizes, would otherwise run different numbers of epochs and read each
// other's buffers with the wrong sizes. So the first epoch of every
// operation is posted with PostStamped, which writes a Stamp (what the
// operation is, as the caller encodes it) into the flag line of the inline
// slot, and every rank compares its peers' stamps with its own after
// waiting for that epoch and before reading any of their data. Ranks whose
// stamps differ all stop after that one epoch, so their epochs still agree
// and the arena stays usable.
//
// # Lifetime
//
// Connect creates this rank's segment (0600, O_EXCL, a stale file of the
// same name removed first), maps every peer's segment, and unlinks its own
// once every peer has mapped it, so after setup nothing is left in the
// directory whatever happens to the processes. Each rank holds an
// open-file-description lock on its segment for as long as its Arena is
// open; the kernel drops it when the process dies, which is how peers tell
// a dead or closed rank from a slow one (across PID namespaces too, and
// immune to PID reuse).
//
// After an operation fails part-way (a dead peer, a cancelled context) the
// ranks' epochs no longer agree, so the Arena refuses further operations
// (ErrBroken): the communicator must be torn down, as with NCCL's abort.
// The failing rank publishes its error in its segment (Fail, failure.go):
// peers waiting for it stop at once with its message (ErrPeerFailed), and
// a peer whose own deadline passes first while it is away across hosts
// (BeginAway) gives it a grace to say why, so that a rank stuck behind a host
// peer names the rank that really failed.
package arena
