package pgbackend

// Lazy links (HCCL_GO_LAZY_LINKS, transport/tcp's Config.Lazy): a rank
// links over TCP only with the peers it exchanges with, on first use. The
// monitor (monitor.go) keeps a control receive posted per peer, which would
// be a first use of every link; so it posts it once the link is up, tells
// failures and goodbyes only to the peers it is linked with, and passes on
// a failure notice it receives, so that a failure reaches every rank
// through the links that exist (each rank fails once, so the notices stop).

// lazyLinker is what the monitor needs of a TCP endpoint with lazy links.
type lazyLinker interface {
	// Linked reports whether the link to peer is made and up.
	Linked(peer int) bool
	// LinkReady is closed once the link to peer is made or cannot be.
	LinkReady(peer int) <-chan struct{}
}

// noteLazy records ep as the communicator's lazily linked TCP endpoint.
func (c *Communicator) noteLazy(ep any, lazy bool) {
	if l, ok := ep.(lazyLinker); ok && lazy {
		c.lazy = l
	}
}

// tcpPeer reports whether p is reached over TCP (not this rank, not a
// rank of this host).
func (c *Communicator) tcpPeer(p int) bool { return p != c.rank && c.transports[p] == "tcp" }

// reachable reports whether the monitor may send to p now without making a
// link: always, except to a TCP peer of a lazy endpoint with no link yet.
func (c *Communicator) reachable(p int) bool {
	return c.lazy == nil || !c.tcpPeer(p) || c.lazy.Linked(p)
}

// linkReady is closed once the monitor may post its receive from p.
func (c *Communicator) linkReady(p int) <-chan struct{} {
	if c.lazy == nil || !c.tcpPeer(p) {
		return closedReady
	}
	return c.lazy.LinkReady(p)
}

var closedReady = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()
