package sub_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
	"github.com/hccl-go/hccl-go/transport/sub"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

// owningView closes its parent too, so that the conformance suite's Close
// and PeerDeath cases (which close an endpoint and expect its links to go)
// apply to views.
type owningView struct {
	*sub.Endpoint
	parent transport.Endpoint
}

func (v owningView) Close() error {
	_ = v.Endpoint.Close()
	return v.parent.Close()
}

// TestConformance runs the transport suite over views that list every
// other rank of a larger inproc group, backwards, in tag space 5.
func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		parents := inproc.NewGroup(2*size + 1)
		ranks := make([]int, size)
		for i := range ranks {
			ranks[i] = 2 * (size - 1 - i)
		}
		eps := make([]transport.Endpoint, size)
		for i, r := range ranks {
			v, err := sub.New(parents[r], ranks, 5)
			require.NoError(t, err)
			require.Equal(t, i, v.Rank())
			eps[i] = owningView{v, parents[r]}
		}
		t.Cleanup(func() {
			for _, p := range parents {
				_ = p.Close()
			}
		})
		return eps
	})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNewRejects(t *testing.T) {
	parents := inproc.NewGroup(4)
	t.Cleanup(func() {
		for _, p := range parents {
			_ = p.Close()
		}
	})
	cases := []struct {
		name  string
		ranks []int
		space int
		want  string
	}{
		{"out of range", []int{0, 4}, 1, "out of range"},
		{"negative", []int{-1, 0}, 1, "out of range"},
		{"duplicate", []int{0, 1, 0}, 1, "twice"},
		{"without self", []int{1, 2}, 1, "do not include"},
		{"space too large", []int{0, 1}, sub.MaxSpace + 1, "tag space"},
		{"negative space", []int{0, 1}, -1, "tag space"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := sub.New(parents[0], c.ranks, c.space)
			require.ErrorContains(t, err, c.want)
		})
	}
	_, err := sub.New(nil, []int{0}, 0)
	require.Error(t, err)
}

// TestTagSpaces: the same tag in two views (or in the parent) names
// different message streams; space 0 shares the parent's tags.
func TestTagSpaces(t *testing.T) {
	ctx := testCtx(t)
	parents := inproc.NewGroup(2)
	t.Cleanup(func() { _ = parents[0].Close(); _ = parents[1].Close() })
	view := func(r, space int) *sub.Endpoint {
		v, err := sub.New(parents[r], []int{1, 0}, space)
		require.NoError(t, err)
		return v
	}
	a1, b1 := view(0, 1), view(1, 1)
	a2, b2 := view(0, 2), view(1, 2)
	a0 := view(0, 0)
	require.Equal(t, 1, a1.Rank())
	require.Equal(t, 0, b1.Rank())

	require.NoError(t, a1.Send(ctx, 0, 7, []byte("one")))
	require.NoError(t, a2.Send(ctx, 0, 7, []byte("two")))
	require.NoError(t, parents[0].Send(ctx, 1, 7, []byte("par")))
	require.NoError(t, a0.Send(ctx, 0, 7, []byte("zer")))

	got := make([]byte, 3)
	require.NoError(t, b2.Recv(ctx, 1, 7, got))
	assert.Equal(t, "two", string(got))
	require.NoError(t, b1.Recv(ctx, 1, 7, got))
	assert.Equal(t, "one", string(got))
	require.NoError(t, parents[1].Recv(ctx, 0, 7, got))
	assert.Equal(t, "par", string(got))
	require.NoError(t, parents[1].Recv(ctx, 0, 7, got), "space 0 uses the parent's tags")
	assert.Equal(t, "zer", string(got))

	require.ErrorIs(t, a1.Send(ctx, 0, sub.MaxTag+1, nil), sub.ErrTagRange)
	require.NoError(t, a0.Send(ctx, 0, transport.P2PTagBit|3, nil), "space 0 accepts any tag")
	require.NoError(t, parents[1].Recv(ctx, 0, transport.P2PTagBit|3, nil))
	require.NoError(t, a1.Send(ctx, 0, transport.P2PTagBit|3, []byte("p2p")), "point-to-point tags keep their bit")
	require.NoError(t, b1.Recv(ctx, 1, transport.P2PTagBit|3, got))
	assert.Equal(t, "p2p", string(got))
}

// TestNested: a view of a view maps to the grandparent's ranks and keeps
// the one non-zero space.
func TestNested(t *testing.T) {
	ctx := testCtx(t)
	parents := inproc.NewGroup(4)
	t.Cleanup(func() {
		for _, p := range parents {
			_ = p.Close()
		}
	})
	outer := func(r int) *sub.Endpoint {
		v, err := sub.New(parents[r], []int{3, 2, 1, 0}, 0)
		require.NoError(t, err)
		return v
	}
	inner := func(r int) *sub.Endpoint {
		v, err := sub.New(outer(r), []int{2, 0}, 3) // parent ranks 1, 3
		require.NoError(t, err)
		return v
	}
	a, b := inner(1), inner(3)
	require.Equal(t, 0, a.Rank())
	require.Equal(t, 1, b.Rank())
	require.Equal(t, 3, b.ParentRank(1))
	require.NoError(t, a.Send(ctx, 1, 9, []byte("x")))
	got := make([]byte, 1)
	require.NoError(t, b.Recv(ctx, 0, 9, got))
	assert.Equal(t, "x", string(got))

}

// TestNestedSpaces: a view with a space of a view with a space (a phase
// of a collective on a split communicator) has messages of its own,
// apart from the outer view's, another outer view's, and the same inner
// space directly on the parent; nesting deeper, or a nested space above
// MaxNestedSpace, is refused.
func TestNestedSpaces(t *testing.T) {
	ctx := testCtx(t)
	parents := inproc.NewGroup(2)
	t.Cleanup(func() { _ = parents[0].Close(); _ = parents[1].Close() })
	view := func(parent transport.Endpoint, space int) *sub.Endpoint {
		v, err := sub.New(parent, []int{0, 1}, space)
		require.NoError(t, err)
		return v
	}
	outerA, outerB := view(parents[0], 600), view(parents[1], 600)
	otherA, otherB := view(parents[0], 601), view(parents[1], 601)
	innerA, innerB := view(outerA, 3), view(outerB, 3)
	directA, directB := view(parents[0], 3), view(parents[1], 3)

	const tag = 11
	require.NoError(t, innerA.Send(ctx, 1, tag, []byte("inn")))
	require.NoError(t, outerA.Send(ctx, 1, tag, []byte("out")))
	require.NoError(t, otherA.Send(ctx, 1, tag, []byte("oth")))
	require.NoError(t, directA.Send(ctx, 1, tag, []byte("dir")))
	got := make([]byte, 3)
	for _, c := range []struct {
		ep   *sub.Endpoint
		want string
	}{{directB, "dir"}, {otherB, "oth"}, {outerB, "out"}, {innerB, "inn"}} {
		require.NoError(t, c.ep.Recv(ctx, 0, tag, got))
		assert.Equal(t, c.want, string(got))
	}

	require.ErrorIs(t, innerA.Send(ctx, 1, sub.MaxTag+1, nil), sub.ErrTagRange)
	require.ErrorIs(t, outerA.Send(ctx, 1, sub.MaxTag+1, nil), sub.ErrTagRange, "bits of the nested space stay clear")
	_, err := sub.New(innerA, []int{0, 1}, 1)
	require.ErrorContains(t, err, "nested twice")
	_, err = sub.New(outerA, []int{0, 1}, sub.MaxNestedSpace+1)
	require.ErrorContains(t, err, "nested space is at most")
	perm, err := sub.New(innerA, []int{1, 0}, 0)
	require.NoError(t, err, "a permutation of a nested view adds no space")
	require.NoError(t, perm.Send(ctx, 0, tag, []byte("prm")))
	require.NoError(t, innerB.Recv(ctx, 0, tag, got))
	assert.Equal(t, "prm", string(got))
}

// TestFlagBitsKept: control and point-to-point bits pass through a view
// with a space, and the view's space still tells its messages apart.
func TestFlagBitsKept(t *testing.T) {
	ctx := testCtx(t)
	parents := inproc.NewGroup(2)
	t.Cleanup(func() { _ = parents[0].Close(); _ = parents[1].Close() })
	a, err := sub.New(parents[0], []int{0, 1}, 700)
	require.NoError(t, err)
	b, err := sub.New(parents[1], []int{0, 1}, 700)
	require.NoError(t, err)
	for _, flag := range []transport.Tag{1 << 61, 1 << 62, transport.P2PTagBit} {
		require.NoError(t, parents[0].Send(ctx, 1, flag|5, []byte("p")))
		require.NoError(t, a.Send(ctx, 1, flag|5, []byte("v")))
		got := make([]byte, 1)
		require.NoError(t, b.Recv(ctx, 0, flag|5, got))
		assert.Equal(t, "v", string(got))
		require.NoError(t, parents[1].Recv(ctx, 0, flag|5, got))
		assert.Equal(t, "p", string(got))
	}
}

// TestPeerErrorRenumbered: a parent link failure names the view's peer.
func TestPeerErrorRenumbered(t *testing.T) {
	ctx := testCtx(t)
	parents := inproc.NewGroup(3)
	t.Cleanup(func() {
		for _, p := range parents {
			_ = p.Close()
		}
	})
	v, err := sub.New(parents[0], []int{2, 0}, 1)
	require.NoError(t, err)
	require.NoError(t, parents[2].Close())
	err = v.Recv(ctx, 0, 1, make([]byte, 1))
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.Peer)

	require.NoError(t, v.Close())
	require.ErrorIs(t, v.Send(ctx, 1, 1, nil), transport.ErrClosed)
	require.NoError(t, v.Close())
}

// TestSpaceLimit: the spaces a view of an endpoint may take: any on a
// plain endpoint or a permutation of one, nested ones on a view with a
// space, none on a nested view.
func TestSpaceLimit(t *testing.T) {
	parents := inproc.NewGroup(2)
	t.Cleanup(func() { _ = parents[0].Close(); _ = parents[1].Close() })
	perm, err := sub.New(parents[0], []int{1, 0}, 0)
	require.NoError(t, err)
	outer, err := sub.New(parents[0], []int{0, 1}, 600)
	require.NoError(t, err)
	inner, err := sub.New(outer, []int{0, 1}, 3)
	require.NoError(t, err)
	assert.Equal(t, sub.MaxSpace, sub.SpaceLimit(parents[0]))
	assert.Equal(t, sub.MaxSpace, sub.SpaceLimit(perm))
	assert.Equal(t, sub.MaxNestedSpace, sub.SpaceLimit(outer))
	assert.Equal(t, 0, sub.SpaceLimit(inner))
	_, err = sub.New(outer, []int{0, 1}, sub.SpaceLimit(outer))
	require.NoError(t, err, "the limit itself is allowed")
}
