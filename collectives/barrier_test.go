package collectives_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/transport"
)

// TestBarrier: no rank leaves before the last one entered, several
// barriers in a row under distinct tags.
func TestBarrier(t *testing.T) {
	for _, p := range append(worlds, 5, 7) {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			for round := range 3 {
				var lastIn atomic.Int64
				left := make([]int64, p)
				requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
					r := ep.Rank()
					if r == (round+1)%p {
						// This rank enters last, 20 ms after the others:
						// long enough for an early leave to show.
						time.Sleep(20 * time.Millisecond)
						lastIn.Store(time.Now().UnixNano())
					}
					err := collectives.Barrier(ctx, ep, testTag+transport.Tag(round))
					left[r] = time.Now().UnixNano()
					return err
				}))
				for r := range p {
					require.GreaterOrEqual(t, left[r], lastIn.Load(), "rank %d left early", r)
				}
			}
		})
	}
}
