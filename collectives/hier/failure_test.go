package hier_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// TestHostPeersLearnWhyLeaderFailed: ranks 2 and 3 (host 1) never join a
// broadcast from rank 2, so host 0's leader (rank 0) fails on its exchange
// with rank 2 while rank 1 waits for it in the arena. Rank 1's error must
// carry rank 0's, which names rank 2: at once when rank 0 fails early (its
// link is cut), and when both time out together at their shared deadline,
// whichever of them notices it first (rank 1 then waits for rank 0's
// error: arena's TestDeadlineWaitsGraceForPeersFailure).
func TestHostPeersLearnWhyLeaderFailed(t *testing.T) {
	cases := []struct {
		name         string
		leaderCancel bool // rank 0's op is cancelled early; else both share a deadline
	}{
		{"leader fails first", true},
		{"shared deadline", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, []int{0, 0, 1, 1})
			const n = 64 << 10
			deadline := 300 * time.Millisecond
			if tc.leaderCancel {
				deadline = 15 * time.Second // only rank 0's failure can end rank 1's wait soon
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			leaderCtx, cutLink := context.WithCancel(ctx)
			defer cutLink()
			if tc.leaderCancel {
				time.AfterFunc(100*time.Millisecond, cutLink)
			}
			errs := make([]error, 2)
			start := time.Now()
			var wg sync.WaitGroup
			for r, rctx := range []context.Context{leaderCtx, ctx} {
				wg.Go(func() {
					errs[r] = c.comms[r].Broadcast(rctx, 1, nil, make([]byte, n), 2, collectives.Options{})
				})
			}
			wg.Wait()
			require.Error(t, errs[0])
			require.Error(t, errs[1])
			assert.Contains(t, errs[0].Error(), "rank 2", "the leader names the rank it waited for")
			assert.ErrorIs(t, errs[1], arena.ErrPeerFailed)
			assert.Contains(t, errs[1].Error(), "hier broadcast rank 0", "rank 0's own error travels")
			assert.Contains(t, errs[1].Error(), "rank 2", "so rank 1's names the absent rank too")
			if tc.leaderCancel {
				assert.Less(t, time.Since(start), 5*time.Second, "rank 1 stops when rank 0 fails, not at its timeout")
			}
		})
	}
}
