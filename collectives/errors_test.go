package collectives_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// call is one collective call with fixed buffers; every rank makes it.
type call struct {
	name string
	run  func(ctx context.Context, ep transport.Endpoint) error
}

// allCalls returns one call of every collective (all_reduce once per
// algorithm) over n float32 elements per rank.
func allCalls(p, n int) []call {
	f32 := reduce.Float32
	nb := n * 4
	ar := func(algo collectives.Algorithm) call {
		return call{"allreduce/" + algoName(algo), func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllReduce(ctx, ep, testTag, make([]byte, nb), make([]byte, nb), f32, reduce.Sum, collectives.Options{Algo: algo})
		}}
	}
	even := make([]int, p)
	for i := range even {
		even[i] = n
	}
	displs := make([]int, p)
	for i := range displs {
		displs[i] = i * n
	}
	return []call{
		ar(collectives.Ring), ar(collectives.RecursiveDoubling), ar(collectives.HalvingDoubling),
		{"broadcast/tree", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Broadcast(ctx, ep, testTag, make([]byte, nb), make([]byte, nb), 0, collectives.Options{Algo: collectives.Tree})
		}},
		{"broadcast/chain", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Broadcast(ctx, ep, testTag, make([]byte, nb), make([]byte, nb), 0, collectives.Options{Algo: collectives.Chain})
		}},
		{"reduce/tree", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Reduce(ctx, ep, testTag, make([]byte, nb), make([]byte, nb), f32, reduce.Sum, 0, collectives.Options{Algo: collectives.Tree})
		}},
		{"reduce/chain", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Reduce(ctx, ep, testTag, make([]byte, nb), make([]byte, nb), f32, reduce.Sum, 0, collectives.Options{Algo: collectives.Chain})
		}},
		{"allgather", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllGather(ctx, ep, testTag, make([]byte, nb), make([]byte, p*nb), collectives.Options{})
		}},
		{"reducescatter", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.ReduceScatter(ctx, ep, testTag, make([]byte, p*nb), make([]byte, nb), f32, reduce.Sum, collectives.Options{})
		}},
		{"alltoallv", func(ctx context.Context, ep transport.Endpoint) error {
			counts := make([]int, p)
			for i := range counts {
				counts[i] = nb / p
			}
			return collectives.AllToAllV(ctx, ep, testTag, make([]byte, nb), counts, displsOf(counts), make([]byte, nb), counts, displsOf(counts), collectives.Options{})
		}},
		{"gather", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Gather(ctx, ep, testTag, make([]byte, nb), make([]byte, p*nb), 0, collectives.Options{})
		}},
		{"scatter", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Scatter(ctx, ep, testTag, make([]byte, p*nb), make([]byte, nb), 0, collectives.Options{})
		}},
		{"barrier", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Barrier(ctx, ep, testTag)
		}},
	}
}

func displsOf(counts []int) []int {
	d := make([]int, len(counts))
	for i := 1; i < len(counts); i++ {
		d[i] = d[i-1] + counts[i-1]
	}
	return d
}

// TestTimeoutWhenARankNeverCalls: the ranks that do call return the
// context's error once it expires, without hanging.
func TestTimeoutWhenARankNeverCalls(t *testing.T) {
	const p = 3
	for _, c := range allCalls(p, 1000) {
		t.Run(c.name, func(t *testing.T) {
			failed := 0
			for _, missing := range []int{0, 1} { // root, then another rank
				start := time.Now()
				errs := runOn(t, inproc.NewGroup(p), 100*time.Millisecond, func(ctx context.Context, ep transport.Endpoint) error {
					if ep.Rank() == missing {
						return nil
					}
					return c.run(ctx, ep)
				})
				assert.Less(t, time.Since(start), 5*time.Second)
				for r, err := range errs {
					if r == missing || err == nil {
						continue // e.g. a broadcast leaf whose parent is root
					}
					failed++
					require.ErrorIs(t, err, context.DeadlineExceeded, "rank %d", r)
					assert.Contains(t, err.Error(), fmt.Sprintf("rank %d", r))
				}
			}
			assert.Positive(t, failed, "no rank noticed the missing one")
		})
	}
}

// TestPeerClosedBeforeOp: at world 2, a peer whose endpoint is closed makes
// every collective fail on the other rank with an error naming it, at once.
func TestPeerClosedBeforeOp(t *testing.T) {
	for _, c := range allCalls(2, 1000) {
		t.Run(c.name, func(t *testing.T) {
			closed := make(chan struct{})
			errs := runOn(t, inproc.NewGroup(2), 10*time.Second, func(ctx context.Context, ep transport.Endpoint) error {
				if ep.Rank() == 1 {
					defer close(closed)
					return ep.Close()
				}
				<-closed // inproc's Close has failed rank 1 at every peer when it returns
				return c.run(ctx, ep)
			})
			requirePeerNamed(t, errs[0], 1)
		})
	}
}

// TestPeerClosedMidOp: a rank's endpoint closes after its first message
// of the collective. Every other rank either finished, or fails with an
// error naming it, or (not linked to it) times out; at least one names it
// unless all finished.
func TestPeerClosedMidOp(t *testing.T) {
	for _, p := range []int{2, 3} {
		for _, c := range allCalls(p, 1<<15) {
			t.Run(fmt.Sprintf("p%d/%s", p, c.name), func(t *testing.T) {
				dead := p - 1
				eps := inproc.NewGroup(p)
				eps[dead] = &closeAfterFirst{Endpoint: eps[dead]}
				errs := runOn(t, eps, 300*time.Millisecond, c.run)
				named, finished := 0, 0
				for r, err := range errs {
					switch {
					case r == dead:
					case err == nil:
						finished++
					case errors.Is(err, context.DeadlineExceeded):
						require.Equal(t, 3, p, "rank %d timed out although linked to the dead rank: %v", r, err)
					default:
						requirePeerNamed(t, err, dead)
						named++
					}
				}
				if finished < p-1 {
					assert.Positive(t, named, "no rank named the dead peer: %v", errs)
				}
			})
		}
	}
}

func requirePeerNamed(t *testing.T, err error, peer int) {
	t.Helper()
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, peer, pe.Peer, "%v", err)
	require.Contains(t, err.Error(), fmt.Sprintf("rank %d", peer))
}

// closeAfterFirst closes the endpoint it wraps once one message went
// through it: the death of a rank in the middle of a collective.
type closeAfterFirst struct {
	transport.Endpoint
}

func (c *closeAfterFirst) Send(ctx context.Context, peer int, tag transport.Tag, data []byte) error {
	err := c.Endpoint.Send(ctx, peer, tag, data)
	_ = c.Endpoint.Close()
	return err
}

func (c *closeAfterFirst) Recv(ctx context.Context, peer int, tag transport.Tag, buf []byte) error {
	err := c.Endpoint.Recv(ctx, peer, tag, buf)
	_ = c.Endpoint.Close()
	return err
}
