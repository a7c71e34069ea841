package transport

// Queues is implemented by endpoints that can say what they hold for one
// (peer, tag): receives posted and not yet matched, and messages that
// arrived before any receive asked for them. The conformance suite uses it
// to put events in a given order (a receive posted before its message, a
// message buffered before its receive) by waiting for that state instead of
// sleeping.
type Queues interface {
	Queued(peer int, tag Tag) (posted, arrived int)
}
