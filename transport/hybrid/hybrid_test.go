package hybrid_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/hybrid"
	"github.com/hccl-go/hccl-go/transport/inproc"
	"github.com/hccl-go/hccl-go/transport/shm"
	"github.com/hccl-go/hccl-go/transport/tcp"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

// hostOf places ranks two per emulated host: 0 and 1 share one, 2 and 3
// the next, and so on.
func hostOf(rank int) int { return rank / 2 }

// remoteGroup connects size ranks with the transport used between hosts.
type remoteGroup func(t *testing.T, size int) []transport.Endpoint

func inprocGroup(t *testing.T, size int) []transport.Endpoint {
	eps := inproc.NewGroup(size)
	t.Cleanup(func() {
		for _, e := range eps {
			_ = e.Close()
		}
	})
	return eps
}

func tcpGroup(t *testing.T, size int) []transport.Endpoint {
	ls := make([]*tcp.Listener, size)
	addrs := make([]string, size)
	for i := range size {
		l, err := tcp.Listen("127.0.0.1:0")
		require.NoError(t, err)
		ls[i], addrs[i] = l, l.Addr()
	}
	eps := make([]transport.Endpoint, size)
	errs := make([]error, size)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range size {
		wg.Go(func() {
			eps[i], errs[i] = tcp.Connect(ctx, ls[i], i, addrs, tcp.Config{Secret: []byte("hybrid test")})
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, e := range eps {
			if e != nil {
				_ = e.Close()
			}
		}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	return eps
}

// shmGroups connects the ranks of each emulated host through shared memory;
// element r is rank r's endpoint.
func shmGroups(t *testing.T, size int) []transport.Endpoint {
	dir, err := os.MkdirTemp("/dev/shm", "hccl-go-hybrid-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	job := fmt.Sprintf("%s/%d/%d", t.Name(), os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps := make([]transport.Endpoint, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		var peers []int
		for p := range size {
			if hostOf(p) == hostOf(r) {
				peers = append(peers, p)
			}
		}
		wg.Go(func() {
			e, err := shm.Connect(ctx, r, peers, size, fmt.Sprintf("%s/host%d", job, hostOf(r)), shm.Config{Dir: dir})
			if err == nil {
				eps[r] = e
			}
			errs[r] = err
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, e := range eps {
			if e != nil {
				_ = e.Close()
			}
		}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	return eps
}

// hybridGroup builds size hybrid endpoints: shm within a host, remote
// between hosts.
func hybridGroup(t *testing.T, size int, remote remoteGroup) []transport.Endpoint {
	far := remote(t, size)
	near := shmGroups(t, size)
	eps := make([]transport.Endpoint, size)
	for r := range size {
		routes := make([]transport.Endpoint, size)
		for p := range size {
			switch {
			case p == r:
			case hostOf(p) == hostOf(r):
				routes[p] = near[r]
			default:
				routes[p] = far[r]
			}
		}
		eps[r] = hybrid.New(r, size, routes)
	}
	t.Cleanup(func() {
		for _, e := range eps {
			_ = e.Close()
		}
	})
	return eps
}

func TestConformance(t *testing.T) {
	for name, remote := range map[string]remoteGroup{"inproc": inprocGroup, "tcp": tcpGroup} {
		t.Run(name, func(t *testing.T) {
			transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
				return hybridGroup(t, size, remote)
			})
		})
	}
}

// counting wraps an endpoint and counts its use.
type counting struct {
	transport.Endpoint
	sends, recvs, closes atomic.Int32
}

func (c *counting) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	c.sends.Add(1)
	return c.Endpoint.Send(ctx, peer, tag, data)
}

func (c *counting) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	c.recvs.Add(1)
	return c.Endpoint.Recv(ctx, peer, tag, buf)
}

func (c *counting) Close() error {
	c.closes.Add(1)
	return c.Endpoint.Close()
}

// TestRouting checks that each peer's traffic takes its own route, that
// self messages take none, and that Close closes each route exactly once.
func TestRouting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	base := inprocGroup(t, 3)
	a := &counting{Endpoint: base[0]}
	b := &counting{Endpoint: base[0]}
	e := hybrid.New(0, 3, []transport.Endpoint{nil, a, b})
	assert.Equal(t, 0, e.Rank())
	assert.Equal(t, 3, e.Size())

	require.NoError(t, e.Send(ctx, 1, 1, []byte("to1")))
	require.NoError(t, e.Send(ctx, 2, 1, []byte("to2")))
	require.NoError(t, e.Send(ctx, 0, 1, []byte("me")))
	got := make([]byte, 2)
	require.NoError(t, e.Recv(ctx, 0, 1, got))
	assert.Equal(t, "me", string(got))
	require.NoError(t, base[2].Send(ctx, 0, 5, []byte("hi")))
	require.NoError(t, e.Recv(ctx, 2, 5, got))
	assert.Equal(t, int32(1), a.sends.Load())
	assert.Equal(t, int32(1), b.sends.Load())
	assert.Equal(t, int32(0), a.recvs.Load())
	assert.Equal(t, int32(1), b.recvs.Load())

	require.NoError(t, e.Close())
	require.NoError(t, e.Close())
	assert.Equal(t, int32(1), a.closes.Load())
	assert.Equal(t, int32(1), b.closes.Load())
	assert.ErrorIs(t, e.Send(ctx, 1, 1, nil), transport.ErrClosed)
	assert.ErrorIs(t, e.Recv(ctx, 0, 1, got), transport.ErrClosed)
}

func TestSharedRouteClosedOnce(t *testing.T) {
	base := inprocGroup(t, 4)
	shared := &counting{Endpoint: base[1]}
	e := hybrid.New(1, 4, []transport.Endpoint{shared, nil, shared, shared})
	require.NoError(t, e.Close())
	assert.Equal(t, int32(1), shared.closes.Load())
}

func TestMissingRoute(t *testing.T) {
	ctx := context.Background()
	base := inprocGroup(t, 3)
	e := hybrid.New(0, 3, []transport.Endpoint{nil, base[0]}) // short: no route to 2
	defer e.Close()
	assert.Error(t, e.Send(ctx, 2, 1, []byte("x")))
	assert.Error(t, e.Recv(ctx, 2, 1, make([]byte, 1)))
	assert.Error(t, e.Send(ctx, 3, 1, nil))
	assert.Error(t, e.Recv(ctx, -1, 1, nil))
}

func TestSelfMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e := hybrid.New(0, 1, nil)
	require.NoError(t, e.Send(ctx, 0, 1, []byte("a")))
	require.NoError(t, e.Send(ctx, 0, 1, []byte("bb")))
	got := make([]byte, 1)
	require.NoError(t, e.Recv(ctx, 0, 1, got))
	assert.Equal(t, "a", string(got))
	assert.ErrorIs(t, e.Recv(ctx, 0, 1, got), transport.ErrSizeMismatch, "the 2-byte message is consumed")

	posted := make(chan error, 1)
	go func() { posted <- e.Recv(ctx, 0, 2, got) }()
	transporttest.WaitPosted(t, e, 0, 2)
	require.NoError(t, e.Send(ctx, 0, 2, []byte("c")))
	require.NoError(t, <-posted)
	assert.Equal(t, "c", string(got))

	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	assert.ErrorIs(t, e.Recv(short, 0, 3, got), context.DeadlineExceeded)
	require.NoError(t, e.Send(ctx, 0, 3, []byte("d")))
	require.NoError(t, e.Recv(ctx, 0, 3, got), "the abandoned receive took nothing")
	assert.Equal(t, "d", string(got))

	go func() { posted <- e.Recv(ctx, 0, 4, got) }()
	transporttest.WaitPosted(t, e, 0, 4)
	require.NoError(t, e.Close())
	assert.ErrorIs(t, <-posted, transport.ErrClosed)
	assert.ErrorIs(t, e.Send(ctx, 0, 1, got), transport.ErrClosed)
}
