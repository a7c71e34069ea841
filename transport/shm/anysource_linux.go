package shm

import (
	"context"

	"github.com/hccl-go/hccl-go/transport"
)

var _ transport.AnySource = (*Endpoint)(nil)

// TryRecvAny implements transport.AnySource: it drains the rings once (when
// no other goroutine is), then takes, of the messages under tag from the
// admitted peers that nobody has received yet, the one that arrived first.
func (e *Endpoint) TryRecvAny(ctx context.Context, tag transport.Tag, buf []byte, accept func(peer int) bool) (int, bool, error) {
	if e.token.TryLock() {
		if !e.closed.Load() { // Close unmaps the rings after its own turn with token
			e.pollAll(nil)
		}
		e.token.Unlock()
	}
	e.mu.Lock()
	if e.matchClosed {
		e.mu.Unlock()
		return -1, false, transport.ErrClosed
	}
	from := -1
	var first *message
	for p := range e.size {
		if !accept(p) {
			continue
		}
		if q := e.queues[key{p, tag}]; q != nil && len(q.arrived) > 0 && (first == nil || q.arrived[0].seq < first.seq) {
			from, first = p, q.arrived[0]
		}
	}
	if first == nil {
		defer e.mu.Unlock()
		for p, err := range e.peerErr {
			if err != nil && accept(p) {
				return -1, false, err
			}
		}
		return -1, false, nil
	}
	r := e.post(from, tag, buf) // takes first: it heads its queue
	e.mu.Unlock()
	return from, true, e.finishRecv(ctx, r, from, tag)
}
