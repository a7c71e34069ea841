package transporttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// closeAfterRounds is how many fresh groups testCloseRightAfterExchange
// runs through: the race it guards against is narrow, so it needs many
// tries to show up.
const closeAfterRounds = 200

// testCloseRightAfterExchange is a barrier followed by the destruction of
// the communicator, as every job ends: each rank sends a byte to the other,
// receives the other's, and closes its endpoint at once. A rank that has
// its peer's byte may close while the peer's Send is still returning; a Send
// whose message was written out (the peer received it) must still succeed.
func testCloseRightAfterExchange(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	rounds := closeAfterRounds
	if testing.Short() {
		rounds /= 10
	}
	for round := range rounds {
		eps := newGroup(t, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for r := range 2 {
			wg.Go(func() { errs[r] = exchangeAndClose(ctx, eps[r], 1-r) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...), "round %d", round)
	}
}

func exchangeAndClose(ctx context.Context, ep transport.Endpoint, peer int) error {
	const tag = transport.Tag(10)
	if err := ep.Send(ctx, peer, tag, []byte{byte(ep.Rank())}); err != nil {
		return fmt.Errorf("rank %d: send: %w", ep.Rank(), err)
	}
	got := make([]byte, 1)
	if err := ep.Recv(ctx, peer, tag, got); err != nil {
		return fmt.Errorf("rank %d: recv: %w", ep.Rank(), err)
	}
	if got[0] != byte(peer) {
		return fmt.Errorf("rank %d: got byte %d, want %d", ep.Rank(), got[0], peer)
	}
	if err := ep.Close(); err != nil {
		return fmt.Errorf("rank %d: close: %w", ep.Rank(), err)
	}
	return nil
}
