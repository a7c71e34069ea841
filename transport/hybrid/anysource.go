package hybrid

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/transport"
)

var _ transport.AnySource = (*Endpoint)(nil)

// TryRecvAny implements transport.AnySource over the routes: messages to
// self first, then each route for the admitted peers it serves, starting
// from a different route each call so that no route starves the others.
// A route that cannot receive from any source fails the call.
func (e *Endpoint) TryRecvAny(ctx context.Context, tag transport.Tag, buf []byte, accept func(peer int) bool) (int, bool, error) {
	if e.closed.Load() {
		return -1, false, transport.ErrClosed
	}
	if e.rank >= 0 && e.rank < e.size && accept(e.rank) {
		ok, err := e.self.tryRecv(tag, buf)
		if ok || err != nil {
			return e.rank, ok, err
		}
	}
	routes := e.distinctRoutes()
	start := int(e.anyTurn.Add(1))
	for i := range routes {
		r := routes[(start+i)%len(routes)]
		a, ok := r.ep.(transport.AnySource)
		if !ok {
			return -1, false, fmt.Errorf("hybrid: %w (%T)", transport.ErrNoAnySource, r.ep)
		}
		served := func(p int) bool { return p >= 0 && p < len(r.serves) && r.serves[p] && accept(p) }
		peer, ok, err := a.TryRecvAny(ctx, tag, buf, served)
		if ok || err != nil {
			return peer, ok, err
		}
	}
	return -1, false, nil
}

// route is one endpoint and the peers it serves.
type route struct {
	ep     transport.Endpoint
	serves []bool // by peer rank
}

// distinctRoutes lists each route once, in the order of the first peer it
// serves.
func (e *Endpoint) distinctRoutes() []route {
	e.distinctOnce.Do(func() {
		first := make(map[int]int) // index in routes of a route's first peer -> index in distinct
		for i, r := range e.routes {
			if r == nil {
				continue
			}
			j := i
			for k := range e.routes[:i] {
				if e.sameRoute(k, i) {
					j = k
					break
				}
			}
			d, ok := first[j]
			if !ok {
				d = len(e.distinct)
				first[j] = d
				e.distinct = append(e.distinct, route{ep: r, serves: make([]bool, e.size)})
			}
			e.distinct[d].serves[i] = true
		}
	})
	return e.distinct
}
