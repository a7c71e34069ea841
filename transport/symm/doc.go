// Package symm is symmetric memory among the ranks of one host: every rank
// allocates a region of the same size, collectively, in a segment of its own
// in /dev/shm, and maps the regions of the other ranks of its host, so that
// a rank loads from and stores to a peer's region directly, copies into and
// out of it (Put, Get), and synchronises with it through counters in the
// segments (Signal, WaitSignal, Barrier).
//
// # Lifetime
//
// Alloc creates this rank's segment (0600, O_EXCL, under a name drawn at
// random by rank 0 for this allocation), maps every local peer's, and unlinks
// its own once every local peer has mapped it, so after Alloc returns nothing
// is left in the directory whatever happens to the processes. A failed Alloc
// also removes the files of peers that died before they could. Each rank
// holds an open-file-description lock on its segment while its Window is
// open; the kernel drops it when the process dies, which is how a waiting
// rank tells a dead or closed peer from a slow one. The memory itself lives
// until the last process that maps it unmaps it or exits.
//
// # Hosts
//
// Ranks whose host identity differs from this rank's are remote: the window
// records them. Put, Get, Signal, WaitSignal and Barrier reach them through
// the Spec's Remote (pgbackend carries them over a communicator's links;
// remote.go); Region, and every operation without a Remote, fails with
// ErrCrossHost.
//
// # Ordering
//
// Signal and Barrier use sequentially consistent atomics in shared memory:
// every store a rank made to any region before Signal(dst) is visible to dst
// once its WaitSignal returns, and every store before a Barrier is visible
// to every local rank after it.
package symm
