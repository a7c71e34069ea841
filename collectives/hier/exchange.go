package hier

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/hccl-go/hccl-go/transport"
)

// message is one message of a direct exchange: to or from peer (a rank of
// the communicator), its bytes in buf.
type message struct {
	peer int
	buf  []byte
}

// exchange sends every message of sends and receives every message of
// recvs, all at once (one goroutine each, so every link is busy and
// receives land in place), under the op's tag. An op has at most one
// exchange, and a pair of ranks at most one message each way in it.
func exchange(ctx context.Context, ep transport.Endpoint, tag transport.Tag, sends, recvs []message) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, m := range sends {
		g.Go(func() error {
			if err := ep.Send(gctx, m.peer, tag, m.buf); err != nil {
				return fmt.Errorf("send %d bytes to rank %d: %w", len(m.buf), m.peer, err)
			}
			return nil
		})
	}
	for _, m := range recvs {
		g.Go(func() error {
			if err := ep.Recv(gctx, m.peer, tag, m.buf); err != nil {
				return fmt.Errorf("recv %d bytes from rank %d: %w", len(m.buf), m.peer, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// receivers assigns the ranks of other hosts to this host's ranks for a
// direct exchange: the k-th of them in rank order to local index k modulo
// the host's size, so that each local rank takes its share. It returns,
// for every rank of the communicator, the rank of host h that exchanges
// with it (itself for host h's own ranks).
func (c *Comm) receivers(h int) []int {
	hr := c.hosts[h]
	out := make([]int, len(c.hostOf))
	k := 0
	for r, hh := range c.hostOf {
		if hh == h {
			out[r] = r
			continue
		}
		out[r] = hr[k%len(hr)]
		k++
	}
	return out
}

// contributions lists, for each local index of host h, the ranks whose
// blocks it holds after a direct exchange: its own and those assigned to
// it (receivers), in rank order.
func (c *Comm) contributions(h int, recvOf []int) [][]int {
	out := make([][]int, len(c.hosts[h]))
	for r, by := range recvOf {
		if c.hostOf[by] == h {
			i := c.localOf[by]
			out[i] = append(out[i], r)
		}
	}
	return out
}
