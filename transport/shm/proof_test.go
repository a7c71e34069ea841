//go:build linux

package shm

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

func TestDifferentProofsFailConnectAtOnce(t *testing.T) {
	dir := shmDir(t)
	job := newJobID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proofs := [][proofSize]byte{{1}, {1}, {2}} // rank 2 holds another secret
	errs := make([]error, len(proofs))
	var wg sync.WaitGroup
	start := time.Now()
	for r := range proofs {
		wg.Go(func() {
			e, err := Connect(ctx, r, []int{0, 1, 2}, 3, job, Config{Dir: dir, Proof: proofs[r]})
			if err == nil {
				_ = e.Close()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	assert.Less(t, time.Since(start), 10*time.Second, "a mismatch fails at once, not at the timeout")
	for r, err := range errs {
		// Each rank either found a segment proving another secret or was
		// told so by a rank that did; either way the error names a rank.
		require.ErrorIs(t, err, ErrBadSecret, "rank %d", r)
		var pe *transport.PeerError
		require.ErrorAs(t, err, &pe, "rank %d", r)
		assert.NotEqual(t, r, pe.Peer, "rank %d names another rank", r)
	}
}
