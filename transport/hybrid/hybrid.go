// Package hybrid makes one transport.Endpoint out of several, choosing one
// per peer: typically shared memory for the ranks of the same host and TCP
// for the others, so that one communicator mixes both.
package hybrid

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/hccl-go/hccl-go/transport"
)

// Endpoint routes each peer's traffic to the endpoint chosen for it.
type Endpoint struct {
	rank, size int
	routes     []transport.Endpoint
	self       *selfBox // messages of this rank to itself

	distinctOnce sync.Once
	distinct     []route       // each route once (distinctRoutes)
	anyTurn      atomic.Uint32 // the route TryRecvAny tries first

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ transport.Endpoint = (*Endpoint)(nil)

// errNoRoute is returned for a peer that was given no endpoint.
var errNoRoute = errors.New("no endpoint routes to this peer")

// New returns the endpoint of rank in a communicator of size ranks. routes[p]
// carries all traffic with peer p, and must number ranks as this
// communicator does; routes[rank] is ignored (nil by convention): messages
// to self are delivered here. The same endpoint may serve many peers. The
// returned endpoint owns the routes: its Close closes each of them once.
func New(rank, size int, routes []transport.Endpoint) transport.Endpoint {
	r := make([]transport.Endpoint, size)
	copy(r, routes)
	if rank >= 0 && rank < size {
		r[rank] = nil
	}
	return &Endpoint{rank: rank, size: size, routes: r, self: newSelfBox()}
}

// Rank implements transport.Endpoint.
func (e *Endpoint) Rank() int { return e.rank }

// Size implements transport.Endpoint.
func (e *Endpoint) Size() int { return e.size }

// Send implements transport.Endpoint.
func (e *Endpoint) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	if peer == e.rank && peer >= 0 && peer < e.size {
		return e.sendSelf(ctx, tag, data)
	}
	route, err := e.route(peer)
	if err != nil {
		return fmt.Errorf("hybrid send: %w", err)
	}
	return route.Send(ctx, peer, tag, data)
}

// Recv implements transport.Endpoint.
func (e *Endpoint) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	if peer == e.rank && peer >= 0 && peer < e.size {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("recv from self tag %#x: %w", uint64(tag), err)
		}
		return e.self.recv(ctx, tag, buf)
	}
	route, err := e.route(peer)
	if err != nil {
		return fmt.Errorf("hybrid recv: %w", err)
	}
	return route.Recv(ctx, peer, tag, buf)
}

// Queued implements transport.Queues when the route serving peer does
// (zeros otherwise).
func (e *Endpoint) Queued(peer int, tag transport.Tag) (posted, arrived int) {
	if peer == e.rank && peer >= 0 && peer < e.size {
		return e.self.queued(tag)
	}
	route, err := e.route(peer)
	if err != nil {
		return 0, 0
	}
	if q, ok := route.(transport.Queues); ok {
		return q.Queued(peer, tag)
	}
	return 0, 0
}

// route returns the endpoint serving peer.
func (e *Endpoint) route(peer int) (transport.Endpoint, error) {
	if peer < 0 || peer >= e.size {
		return nil, fmt.Errorf("peer rank %d out of range [0, %d)", peer, e.size)
	}
	if e.closed.Load() {
		return nil, transport.ErrClosed
	}
	r := e.routes[peer]
	if r == nil {
		return nil, fmt.Errorf("peer rank %d: %w", peer, errNoRoute)
	}
	return r, nil
}

// sendSelf delivers a message to this rank's own receives.
func (e *Endpoint) sendSelf(ctx context.Context, tag transport.Tag, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send to self tag %#x: %w", uint64(tag), err)
	}
	return e.self.send(tag, data)
}

// Close implements transport.Endpoint: it closes every route once.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		e.self.close()
		var errs []error
		for i, r := range e.routes {
			if r != nil && !e.closedEarlier(i) {
				errs = append(errs, r.Close())
			}
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// closedEarlier reports whether routes[i] also serves a lower rank, and was
// therefore closed already.
func (e *Endpoint) closedEarlier(i int) bool {
	for k := range e.routes[:i] {
		if e.sameRoute(k, i) {
			return true
		}
	}
	return false
}

// sameRoute reports whether routes[a] and routes[b] are known to be one
// endpoint (false when their type cannot tell).
func (e *Endpoint) sameRoute(a, b int) bool {
	p, q := e.routes[a], e.routes[b]
	return p != nil && q != nil && reflect.TypeOf(p) == reflect.TypeOf(q) && reflect.TypeOf(p).Comparable() && p == q
}
