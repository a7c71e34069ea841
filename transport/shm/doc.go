// Package shm is a transport.Endpoint between the ranks of one host, across
// processes, through shared memory.
//
// Each rank creates one segment file in /dev/shm holding its inbox: one ring
// of fixed-size slots per other rank of the host. A sender writes into its
// ring in the receiver's segment. A receiving goroutine drains the rings
// itself while it spins, so a message that comes soon lands straight in its
// buffer with no hand-off between goroutines; a reader goroutine drains them
// otherwise (receives that went to sleep, messages nobody waits for, rings
// filling up) into posted receives or buffered unexpected messages, so a
// send never waits for the matching receive to be posted. Every segment is
// unlinked as soon as all ranks of the host have mapped it (Connect returns
// only then), so a crash after Connect leaves nothing behind in /dev/shm.
//
// A slot holds a 64-byte header line with a sequence flag that the sender
// stores last; a message of at most 40 bytes travels inline in that line,
// larger ones in the slot bodies, split across slots when they do not fit.
// Waiting is spin, then yield, then sleep on a cross-process futex; a waker
// makes the futex system call only when a sleeper announced itself.
//
// Large messages can travel single-copy: the sender publishes the address of
// its buffer and the receiver reads it with process_vm_readv straight into
// the posted buffer. Where the kernel refuses that (ptrace restrictions,
// seccomp; another PID namespace is not even tried) the transfer falls back
// to the ring, and so does one whose receive is not posted within about the
// time the copy would take.
//
// Peers are watched (pidfd, or a heartbeat across PID namespaces): when one
// dies or closes, operations involving it fail with a *transport.PeerError
// within about Config.LivenessInterval. A Send that gives up (context) in
// the middle of a message breaks the link to that peer on both sides, as a
// half-written frame breaks a TCP connection.
package shm
