package arena

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConnectLeavesNothingBehind(t *testing.T) {
	for _, p := range []int{1, 2, 3, 8} {
		t.Run("", func(t *testing.T) {
			dir := shmDir(t)
			arenas := connectAll(t, p, testConfig(dir))
			assert.Empty(t, segmentFiles(t, dir), "segments are unlinked once mapped")
			for i, a := range arenas {
				assert.Equal(t, p, a.Size())
				assert.Equal(t, i, a.Index())
				assert.Len(t, a.Inline(i, 1), a.InlineBytes())
				assert.Len(t, a.Half(i, 1), a.HalfBytes())
			}
		})
	}
}

func TestConfigRounding(t *testing.T) {
	cfg, err := Config{InlineBytes: 8, DataBytes: 1}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, lineSize-flagBytes-stampBytes, cfg.InlineBytes, "a slot is whole lines")
	assert.Equal(t, 2*pageSize, cfg.DataBytes)
	_, err = Config{InlineBytes: -1}.withDefaults()
	assert.Error(t, err)
}

func TestBadRankLists(t *testing.T) {
	ctx := context.Background()
	for _, local := range [][]int{nil, {1, 0}, {0, 0, 1}, {0, 2}} {
		_, err := Connect(ctx, 1, local, "job", testConfig(t.TempDir()))
		assert.Error(t, err, "%v", local)
	}
}

func TestPostAndWaitAcrossEpochs(t *testing.T) {
	const p, epochs = 3, 200
	arenas := connectAll(t, p, testConfig(shmDir(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, p)
	for i, a := range arenas {
		wg.Go(func() {
			require.NoError(t, a.Begin(1))
			var err error
			defer func() { a.End(err); errs[i] = err }()
			for range epochs {
				e := a.Next()
				inline := e%3 == 0
				if inline {
					a.Inline(i, e)[0] = byte(e) + byte(i)
					a.PostInline(e)
					err = a.WaitAllInline(ctx, e)
				} else {
					a.Half(i, e)[0] = byte(e) + byte(i)
					a.Post(e)
					err = a.WaitAll(ctx, e)
				}
				if err != nil {
					return
				}
				for j := range p {
					got := a.Half(j, e)[0]
					if inline {
						got = a.Inline(j, e)[0]
					}
					if got != byte(e)+byte(j) {
						err = errors.New("stale data")
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for i := range p {
		assert.NoError(t, errs[i], "rank %d", i)
	}
}

// waitAsleep waits until a goroutine of a sleeps on peer j's bell.
func waitAsleep(t *testing.T, a *Arena, j int) {
	t.Helper()
	require.Eventually(t, func() bool { return a.waiters[j].Load() > 0 }, 5*time.Second, 100*time.Microsecond,
		"nobody went to sleep on rank %d's bell", j)
}

// slowLiveness is a configuration whose sleepers wake on their own only every
// 5 s, so that a test can tell a wake-up from a liveness check with a margin.
func slowLiveness(t *testing.T) Config {
	cfg := testConfig(shmDir(t))
	cfg.LivenessInterval = 5 * time.Second
	return cfg
}

func TestSleepingWaiterIsWoken(t *testing.T) {
	arenas := connectAll(t, 2, slowLiveness(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	require.NoError(t, arenas[0].Begin(1))
	go func() {
		e := arenas[0].Next()
		done <- arenas[0].Wait(ctx, 1, e)
	}()
	waitAsleep(t, arenas[0], 1) // past spinning and yielding
	require.NoError(t, arenas[1].Begin(1))
	start := time.Now()
	arenas[1].Post(arenas[1].Next())
	require.NoError(t, <-done)
	assert.Less(t, time.Since(start), time.Second, "woken by the post, not the liveness timeout")
	arenas[0].End(nil)
	arenas[1].End(nil)
}

func TestWaitEndsWithContext(t *testing.T) {
	cfg := testConfig(shmDir(t))
	cfg.FailureGrace = -1 // the deadline ends the wait at once (failure_test.go has the grace)
	arenas := connectAll(t, 2, cfg)
	a := arenas[0]
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.NoError(t, a.Begin(7))
	start := time.Now()
	err := a.WaitAll(ctx, a.Next())
	a.End(err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second)
	assert.Contains(t, err.Error(), "peer rank 1")

	err = a.Begin(8)
	assert.ErrorIs(t, err, ErrBroken, "epochs disagree after a failed op")
}

func TestCancelWakesSleeper(t *testing.T) {
	arenas := connectAll(t, 2, slowLiveness(t))
	a := arenas[0]
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, a.Begin(1))
	done := make(chan error, 1)
	go func() { done <- a.WaitAll(ctx, a.Next()) }()
	waitAsleep(t, a, 1)
	start := time.Now()
	cancel()
	err := <-done
	a.End(err)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), time.Second, "woken by the cancel, not the liveness timeout")
}

func TestPeerCloseIsDetected(t *testing.T) {
	cfg := testConfig(shmDir(t))
	arenas := connectAll(t, 3, cfg)
	a := arenas[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Begin(1))
	done := make(chan error, 1)
	go func() { done <- a.WaitAll(ctx, a.Next()) }()
	waitAsleep(t, a, 1)
	start := time.Now()
	require.NoError(t, arenas[1].Close())
	err := <-done
	a.End(err)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Rank)
	assert.ErrorIs(t, err, ErrPeerGone)
	assert.Less(t, time.Since(start), 5*cfg.LivenessInterval)
}

func TestCloseInterruptsWait(t *testing.T) {
	arenas := connectAll(t, 2, testConfig(shmDir(t)))
	a := arenas[0]
	require.NoError(t, a.Begin(1))
	done := make(chan error, 1)
	go func() {
		err := a.WaitAll(context.Background(), a.Next())
		a.End(err)
		done <- err
	}()
	waitAsleep(t, a, 1)
	require.NoError(t, a.Close())
	assert.ErrorIs(t, <-done, ErrClosed)
	assert.ErrorIs(t, a.Begin(2), ErrBroken)
}

func TestConnectTimesOutWithoutPeers(t *testing.T) {
	dir := shmDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := Connect(ctx, 0, []int{0, 1}, "lonely", testConfig(dir))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "peer rank 1")
	assert.Empty(t, segmentFiles(t, dir), "a failed Connect removes its segment")
}

func TestConfigMismatchIsAnError(t *testing.T) {
	dir := shmDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	other := testConfig(dir)
	other.DataBytes *= 2
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, cfg := range []Config{testConfig(dir), other} {
		wg.Go(func() {
			a, err := Connect(ctx, r, []int{0, 1}, "mismatch", cfg)
			if err == nil {
				a.Close()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	require.Error(t, errs[0])
	assert.Contains(t, errs[0].Error()+errs[1].Error(), "configs must match")
}

func TestStaleSegmentIsReplaced(t *testing.T) {
	dir := shmDir(t)
	cfg := testConfig(dir)
	full, err := cfg.withDefaults()
	require.NoError(t, err)
	// A segment of rank 1 left by a crashed run: complete header, no lock.
	h := header{nLocal: 2, index: 1, geom: geometry{full.InlineBytes, full.DataBytes}, hash: jobHash("stale")}
	s, err := createSegment(segmentPath(dir, h.hash, 1), h)
	require.NoError(t, err)
	s.linked = false
	require.NoError(t, s.release()) // drops the lock, as a crash would (the mapping holds it too)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	arenas := make([]*Arena, 2)
	errs := make([]error, 2)
	found := make(chan struct{})
	var once sync.Once
	stalePath := segmentPath(dir, h.hash, 1)
	staleSeen = func(path string) {
		if path == stalePath {
			once.Do(func() { close(found) })
		}
	}
	wg.Go(func() { arenas[0], errs[0] = Connect(ctx, 0, []int{0, 1}, "stale", cfg) })
	select { // rank 0 sees the stale file first
	case <-found:
	case <-time.After(5 * time.Second):
		t.Error("rank 0 never found rank 1's stale segment")
	}
	wg.Go(func() { arenas[1], errs[1] = Connect(ctx, 1, []int{0, 1}, "stale", cfg) })
	wg.Wait()
	staleSeen = nil
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	for _, a := range arenas {
		require.NoError(t, a.Close())
	}
	assert.Empty(t, segmentFiles(t, dir))
}

func TestLiveSegmentIsNotReplaced(t *testing.T) {
	dir := shmDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, 0, []int{0, 1}, "same-job", testConfig(dir))
		first <- err // times out: rank 1 never comes
	}()
	// The first arena's segment is created and locked: it is live.
	path := segmentPath(dir, jobHash("same-job"), 0)
	require.Eventually(t, func() bool {
		fd, _, err := openFile(path)
		if err != nil {
			return false
		}
		defer closeFile(fd)
		held, err := lockHeld(fd)
		return err == nil && held
	}, 5*time.Second, 100*time.Microsecond, "the first arena's segment never appeared")
	_, err := Connect(ctx, 0, []int{0, 1}, "same-job", testConfig(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by a live process")
	assert.ErrorIs(t, <-first, context.DeadlineExceeded, "the first arena was left alone")
}

// TestWaitedCountsWaiting: Waited grows by about the time a rank waits for
// a late peer, and not at all when the peer has already posted.
func TestWaitedCountsWaiting(t *testing.T) {
	as := connectAll(t, 2, testConfig(shmDir(t)))
	as[1].Post(1)
	require.NoError(t, as[0].Wait(context.Background(), 1, 1))
	assert.Zero(t, as[0].Waited(), "no wait for a peer that had posted")
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		time.Sleep(50 * time.Millisecond)
		as[1].Post(2)
	}()
	start := time.Now()
	require.NoError(t, as[0].Wait(context.Background(), 1, 2))
	took := time.Since(start)
	<-posted // the poster's reads of package state happen before later tests change it
	assert.GreaterOrEqual(t, as[0].Waited(), 40*time.Millisecond)
	assert.LessOrEqual(t, as[0].Waited(), took)
}
