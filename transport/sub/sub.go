// Package sub gives a view of some ranks of a transport.Endpoint as an
// endpoint of its own: the chosen ranks renumbered 0..k-1 in the order
// given, with messages in a tag space of their own.
//
// Algorithms that work in phases over parts of a communicator use views:
// a hierarchical all_reduce runs a reduce-scatter inside each host (a view
// of the host's ranks), an all_reduce across hosts (a view of the ranks
// holding the same shard) and an all-gather inside each host; a ring that
// should follow the fastest links rather than rank order runs over a view
// that lists every rank in ring order. Collectives written for "ranks 0..p-1
// in a ring" then need no change.
//
// Tag spaces: a view with space s sends tag t as t + s<<SpaceShift on its
// parent, so phases of one operation (which share the operation's tag) and
// views of different phases never take each other's messages. Tags of a
// view with a non-zero space must be at most MaxTag, apart from the flag
// bits (FlagBits: transport.P2PTagBit and pgbackend's control bits), which
// are kept. Space 0 leaves tags unchanged: a view that only renumbers
// ranks.
//
// A view with a space of a view with a space (a phase of a collective run
// on a communicator that is itself a view, see pgbackend's splits) puts its
// space, at most MaxNestedSpace, in bits NestedShift..SpaceShift-1, which
// every view with a space keeps clear (MaxTag). Deeper nesting is refused.
// Spaces in use:
//
//	0          permuted views (pgbackend: rings along the topology)
//	1..15      collectives' hierarchical phases (collectives/hier*.go)
//	16         collectives/hier: the leaders of rooted collectives
//	256..271   pgbackend's topology discovery at communicator init
//	272        pgbackend's split agreement (split_agree.go)
//	512..4095  communicators split from another (pgbackend/split.go)
//	4096..8191 collectives/hier: the segments of the all_reduce
//	17..255    collectives/hier: the same, nested in a split's space
package sub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hccl-go/hccl-go/transport"
)

// SpaceShift is the bit position of a view's tag space in the parent's tags.
const SpaceShift = 48

// MaxSpace is the largest tag space: spaces take bits 48-60 of a tag, below
// FlagBits.
const MaxSpace = 1<<13 - 1

// NestedShift is the bit position of a nested view's space (see above).
const NestedShift = 40

// MaxNestedSpace is the largest space of a view of a view with a space.
const MaxNestedSpace = 1<<(SpaceShift-NestedShift) - 1

// FlagBits are the tag bits every view passes through unchanged: bit 63
// marks point-to-point tags (transport.P2PTagBit), bits 61 and 62
// pgbackend's control messages.
const FlagBits transport.Tag = 7 << 61

// MaxTag is the largest tag a view with a non-zero space accepts (not
// counting FlagBits).
const MaxTag transport.Tag = 1<<NestedShift - 1

// ErrTagRange is returned for a tag above MaxTag on a view with a space.
var ErrTagRange = errors.New("sub: tag out of the view's range")

// Endpoint is a view of some of a parent endpoint's ranks. It does not own
// the parent: Close ends the view only (later calls fail with
// transport.ErrClosed; calls already waiting in the parent are not
// interrupted: close or abort the parent for that).
type Endpoint struct {
	parent transport.Endpoint
	ranks  []int       // view rank -> parent rank
	views  map[int]int // parent rank -> view rank
	rank   int         // this rank in the view
	base   transport.Tag
	nested bool // base holds a nested space: no deeper space may be added
	closed atomic.Bool
}

var (
	_ transport.Endpoint  = (*Endpoint)(nil)
	_ transport.AnySource = (*Endpoint)(nil)
)

// New returns the view of parent's ranks ranks[0], ranks[1], ... as ranks
// 0, 1, ... with tag space space. ranks must be distinct, in range, and
// include the parent's own rank. A view of a view is flattened onto the
// grandparent; when both have a non-zero space, the inner one must be at
// most MaxNestedSpace and the outer one must not itself be nested.
func New(parent transport.Endpoint, ranks []int, space int) (*Endpoint, error) {
	if parent == nil {
		return nil, fmt.Errorf("sub: nil parent endpoint")
	}
	if space < 0 || space > MaxSpace {
		return nil, fmt.Errorf("sub: tag space %d out of range [0, %d]", space, MaxSpace)
	}
	n := parent.Size()
	self := -1
	seen := make(map[int]bool, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("sub: rank %d out of range [0, %d)", r, n)
		}
		if seen[r] {
			return nil, fmt.Errorf("sub: rank %d listed twice", r)
		}
		seen[r] = true
		if r == parent.Rank() {
			self = i
		}
	}
	if self < 0 {
		return nil, fmt.Errorf("sub: ranks %v do not include this rank %d", ranks, parent.Rank())
	}
	e := &Endpoint{parent: parent, ranks: append([]int(nil), ranks...), rank: self, base: transport.Tag(space) << SpaceShift}
	if p, ok := parent.(*Endpoint); ok {
		switch {
		case space == 0 || p.base == 0:
			e.base |= p.base
			e.nested = p.nested
		case p.nested:
			return nil, fmt.Errorf("sub: a view with tag space %d of a view nested twice already", space)
		case space > MaxNestedSpace:
			return nil, fmt.Errorf("sub: a view with tag space %d of a view with tag space %d: a nested space is at most %d", space, p.base>>SpaceShift, MaxNestedSpace)
		default:
			e.base = p.base | transport.Tag(space)<<NestedShift
			e.nested = true
		}
		for i, r := range e.ranks {
			e.ranks[i] = p.ranks[r]
		}
		e.parent = p.parent
	}
	e.views = make(map[int]int, len(e.ranks))
	for i, r := range e.ranks {
		e.views[r] = i
	}
	return e, nil
}

// SpaceLimit is the largest tag space a view of ep may take: MaxSpace on
// an endpoint that is not a view with a space, MaxNestedSpace on a view
// with a space, 0 (no space: permutations only) on a nested one.
func SpaceLimit(ep transport.Endpoint) int {
	e, ok := ep.(*Endpoint)
	switch {
	case !ok || e.base == 0:
		return MaxSpace
	case e.nested:
		return 0
	}
	return MaxNestedSpace
}

// Rank is this rank in the view.
func (e *Endpoint) Rank() int { return e.rank }

// Size is the number of ranks in the view.
func (e *Endpoint) Size() int { return len(e.ranks) }

// ParentRank is the parent's number of view rank i (of the endpoint the
// view was flattened onto, for a view of a view).
func (e *Endpoint) ParentRank(i int) int { return e.ranks[i] }

// Send sends to view rank peer under the view's tag.
func (e *Endpoint) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	p, t, err := e.route("send", peer, tag)
	if err != nil {
		return err
	}
	return e.renumber(peer, "send", e.parent.Send(ctx, p, t, data))
}

// Recv receives from view rank peer under the view's tag.
func (e *Endpoint) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	p, t, err := e.route("recv", peer, tag)
	if err != nil {
		return err
	}
	return e.renumber(peer, "recv", e.parent.Recv(ctx, p, t, buf))
}

// TryRecvAny implements transport.AnySource for the view's ranks, when the
// parent does.
func (e *Endpoint) TryRecvAny(ctx context.Context, tag transport.Tag, buf []byte, accept func(peer int) bool) (int, bool, error) {
	a, ok := e.parent.(transport.AnySource)
	if !ok {
		return -1, false, fmt.Errorf("sub: %w (%T)", transport.ErrNoAnySource, e.parent)
	}
	_, t, err := e.route("recv", e.rank, tag)
	if err != nil {
		return -1, false, err
	}
	admitted := func(p int) bool {
		v, ok := e.views[p]
		return ok && accept(v)
	}
	p, ok, err := a.TryRecvAny(ctx, t, buf, admitted)
	v := -1
	if ok {
		v = e.views[p]
	}
	var pe *transport.PeerError
	if errors.As(err, &pe) {
		if pv, in := e.views[pe.Peer]; in {
			err = e.renumber(pv, "recv", err)
		}
	}
	return v, ok, err
}

// Queued implements transport.Queues for the view's ranks and tags, when
// the parent does (zeros otherwise).
func (e *Endpoint) Queued(peer int, tag transport.Tag) (posted, arrived int) {
	q, ok := e.parent.(transport.Queues)
	if !ok {
		return 0, 0
	}
	p, t, err := e.route("recv", peer, tag)
	if err != nil {
		return 0, 0
	}
	return q.Queued(p, t)
}

// Close ends the view (not its parent). It is idempotent.
func (e *Endpoint) Close() error {
	e.closed.Store(true)
	return nil
}

// route maps a view peer and tag to the parent's.
func (e *Endpoint) route(op string, peer int, tag transport.Tag) (int, transport.Tag, error) {
	if e.closed.Load() {
		return 0, 0, transport.ErrClosed
	}
	if peer < 0 || peer >= len(e.ranks) {
		return 0, 0, &transport.PeerError{Peer: peer, Op: op, Err: fmt.Errorf("sub: peer out of range [0, %d)", len(e.ranks))}
	}
	if e.base != 0 && tag&^FlagBits > MaxTag {
		return 0, 0, fmt.Errorf("%w: tag %#x > %#x", ErrTagRange, uint64(tag), uint64(MaxTag))
	}
	return e.ranks[peer], tag | e.base, nil
}

// renumber names the view's peer in a failure of the parent's link, so
// callers' errors.As(err, *transport.PeerError) sees view ranks.
func (e *Endpoint) renumber(peer int, op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *transport.PeerError
	if errors.As(err, &pe) && pe.Peer == e.ranks[peer] {
		return &transport.PeerError{Peer: peer, Op: op, Err: fmt.Errorf("parent rank %d: %w", e.ranks[peer], err)}
	}
	return err
}
