package hier

import (
	"context"
	"fmt"
	"slices"

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

// partner is the rank of host h that exchanges with rank r in a direct
// exchange (r itself when it is on h): host h's ranks take the other
// hosts' ranks in turn, the k-th of them in rank order going to local
// index k modulo the host's size, so that each local rank takes its share.
func (c *Comm) partner(h, r int) int {
	if c.hostOf[r] == h {
		return r
	}
	hr := c.hosts[h]
	below, _ := slices.BinarySearch(hr, r) // host h's ranks below r
	k := r - below
	return hr[k%len(hr)]
}

// contributions lists, for each local index of host h, the ranks whose
// blocks it holds after a direct exchange: its own and those paired with
// it (partner), in rank order.
func (c *Comm) contributions(h int) [][]int {
	out := make([][]int, len(c.hosts[h]))
	for r := range c.hostOf {
		i := c.localOf[c.partner(h, r)]
		out[i] = append(out[i], r)
	}
	return out
}
