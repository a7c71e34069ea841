package arena

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitFor starts arenas[0]'s wait for local rank 1's next epoch under ctx
// and returns its result channel.
func waitFor(ctx context.Context, t *testing.T, a *Arena) <-chan error {
	t.Helper()
	require.NoError(t, a.Begin(1))
	done := make(chan error, 1)
	go func() {
		err := a.Wait(ctx, 1, a.Next())
		a.End(err)
		done <- err
	}()
	return done
}

func TestFailStopsPeersWaitWithItsMessage(t *testing.T) {
	cases := []struct {
		name  string
		sleep bool // the waiter is asleep on the futex, not yielding
	}{
		{"yielding", false},
		{"asleep", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(shmDir(t))
			cfg.LivenessInterval = time.Hour // only the failure record can end the wait
			if !tc.sleep {
				cfg.YieldTime = time.Hour
			}
			arenas := connectAll(t, 2, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := waitFor(ctx, t, arenas[0])
			if tc.sleep {
				waitAsleep(t, arenas[0], 1)
			}
			start := time.Now()
			arenas[1].Fail(errors.New("exchange with rank 7 on another host: connection lost"))
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the wait did not end when its peer failed")
			}
			var peer *PeerError
			require.ErrorAs(t, err, &peer)
			assert.Equal(t, 1, peer.Rank)
			assert.ErrorIs(t, err, ErrPeerFailed)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), "rank 7 on another host", "the peer's own message travels")
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.ErrorIs(t, arenas[1].Begin(2), ErrBroken, "a failed rank refuses further ops")
		})
	}
}

func TestDeadlineWaitsGraceForPeersFailure(t *testing.T) {
	cases := []struct {
		name     string
		away     bool          // the peer works across hosts (BeginAway)
		failAt   time.Duration // when the peer fails, after the waiter's deadline; <0: never
		wantPeer bool
		wantWait bool // the waiter waits the whole grace
	}{
		{"away peer fails within the grace", true, 100 * time.Millisecond, true, false},
		{"away peer stays silent", true, -1, false, true},
		{"peer not away: no grace", false, 100 * time.Millisecond, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(shmDir(t))
			cfg.FailureGrace = 2 * time.Second
			arenas := connectAll(t, 2, cfg)
			const deadline = 50 * time.Millisecond
			if tc.away {
				arenas[1].BeginAway()
				defer arenas[1].EndAway()
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			done := waitFor(ctx, t, arenas[0])
			if tc.failAt >= 0 {
				time.Sleep(deadline + tc.failAt)
				arenas[1].Fail(errors.New("wait for rank 5 of host 2: context deadline exceeded"))
			}
			err := <-done
			took := time.Since(start)
			require.ErrorIs(t, err, context.DeadlineExceeded, "the wait still reports its own timeout")
			if tc.wantPeer {
				assert.ErrorIs(t, err, ErrPeerFailed)
				assert.Contains(t, err.Error(), "rank 5 of host 2")
			} else {
				assert.NotErrorIs(t, err, ErrPeerFailed)
			}
			if tc.wantWait {
				assert.GreaterOrEqual(t, took, cfg.FailureGrace, "a silent live peer away gets the whole grace")
			} else {
				assert.Less(t, took, cfg.FailureGrace, "no grace, or the failure ended it")
			}
		})
	}
}

func TestGraceEndsWhenPeerDies(t *testing.T) {
	cfg := testConfig(shmDir(t))
	cfg.FailureGrace = time.Hour
	arenas := connectAll(t, 2, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	arenas[1].BeginAway()
	done := waitFor(ctx, t, arenas[0])
	time.Sleep(100 * time.Millisecond)
	arenas[1].EndAway()
	arenas[1].BeginAway() // still away when it closes
	require.NoError(t, arenas[1].Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("the grace outlived its peer")
	}
}
