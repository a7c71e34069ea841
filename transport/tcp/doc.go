// Package tcp links the ranks of a communicator over TCP, across processes
// and hosts.
//
// Setup: every rank calls Listen, publishes Listener.Addr through the
// rendezvous (the c10d store), then calls Connect with everybody's address.
// Rank i dials each rank below it and accepts from each rank above it,
// StreamsPerPeer connections per pair, except the ranks Config.Unlinked
// marks (another transport carries them: shared memory inside a host). Each connection starts with a
// versioned handshake (see handshake.go) in which both ends prove the job
// secret by HMAC-SHA256 over fresh nonces; the secret never crosses the
// wire. A connection that fails the handshake (a stranger, garbage, another
// version, another job, a duplicate) is closed and logged without failing the
// setup; one closed before it sends a byte (a peer's reachability probe) is
// closed without a log line. Connect returns when every link is up, or fails with a
// *transport.PeerError naming a missing peer after ConnectTimeout; sooner,
// with ErrUnreachable, when a peer's address takes no TCP connection for
// UnreachableTimeout (its listener was open before the address was
// published, so that is never a slow start; see reach.go). Ranks probe the
// addresses of the ranks above them that have not linked yet, so the ranks
// that only accept learn of it too.
//
// With Config.Lazy, Connect makes no link: the listener stays open for the
// endpoint's life and a link is made on its first use, by the same
// handshake, the higher rank dialing (see lazy.go).
//
// Data: messages are cut into frames of at most MaxFrameBytes behind a fixed
// 40-byte header (see frame.go). The first frame of every message goes on
// stream 0, which fixes the order of messages per (peer, tag); with several
// streams the body of a large message is striped across all of them. Each
// connection has one reader goroutine, which reads a body straight into the
// receive buffer when the Recv is already posted (or takes over when it is
// posted mid-message), and otherwise into a pooled buffer. On Linux, large
// bodies are read with SO_RCVLOWAT raised to what the frame still needs (at
// most 256 KiB), so the reader wakes per quarter megabyte, not per packet
// (rcvlowat.go). Writers send header and body with one writev, with
// TCP_NODELAY. Go's runtime retries EINTR inside its socket calls, so no
// caller sees it.
//
// Failure: an EOF or reset on any connection to a peer fails the whole link
// at once: every pending and later Send or Recv involving that peer returns a
// *transport.PeerError naming it (messages that arrived completely are still
// delivered). Close sends a goodbye frame, so peers report "peer closed its
// endpoint" rather than a reset, and returns after every goroutine it started
// has exited.
package tcp
