package shm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

func TestConformance(t *testing.T) {
	configs := map[string]func(dir string) Config{
		// Tiny rings, wrapped many times; large messages through the ring.
		"small-rings": func(dir string) Config { c := smallConfig(dir); c.DisableCMA = true; return c },
		// Defaults: large messages single-copy.
		"default": func(dir string) Config { return Config{Dir: dir} },
		// Every wait ends on the futex; single-copy refused, so large
		// messages fall back to the ring.
		"sleepy-refused": func(dir string) Config {
			c := smallConfig(dir)
			c.SpinTime, c.YieldTime, c.forceCMARefusal = -1, -1, true
			return c
		},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
				return asEndpoints(connectAll(t, size, cfg(shmDir(t)), true))
			})
		})
	}
}

func TestCheckGroup(t *testing.T) {
	cases := []struct {
		name  string
		rank  int
		peers []int
		size  int
		job   string
		ok    bool
	}{
		{"ok", 1, []int{3, 1}, 4, "j", true},
		{"alone", 0, []int{0}, 1, "j", true},
		{"no job", 0, []int{0}, 1, "", false},
		{"rank out of range", 4, []int{4}, 4, "j", false},
		{"peer out of range", 0, []int{0, 5}, 4, "j", false},
		{"duplicate", 0, []int{0, 1, 1}, 4, "j", false},
		{"self missing", 0, []int{1, 2}, 4, "j", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := checkGroup(c.rank, c.peers, c.size, c.job)
			if c.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{SlotSize: 100}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 128, c.SlotSize, "rounded to a cache line")
	assert.Equal(t, defaultSlots, c.Slots)
	assert.Equal(t, "/dev/shm", c.Dir)
	for _, bad := range []Config{{Slots: 1}, {SlotSize: 8}, {LivenessInterval: -1}} {
		_, err := bad.withDefaults()
		assert.Error(t, err, "%+v", bad)
	}
}

func TestDefaultSlotsKeepTheSegmentWithinBudget(t *testing.T) {
	for _, tc := range []struct {
		nLocal, slotSize, want int
	}{
		{1, 0, defaultSlots},
		{2, 0, defaultSlots},
		{8, 0, defaultSlots}, // 7 rings of 64 slots fit in the budget
		{9, 0, 63},
		{17, 0, 31}, // 16 rings share it
		{64, 0, 8},
		{128, 0, 4}, // 127 rings: 4 slots each (33 MB) instead of 533 MB
		{1024, 0, minDefaultSlots},
		{128, 1 << 10, defaultSlots}, // small slots: 64 of them fit
	} {
		got := defaultSlotsFor(tc.nLocal, tc.slotSize)
		assert.Equal(t, tc.want, got, "%d ranks, slot size %d", tc.nLocal, tc.slotSize)
		size := tc.slotSize
		if size == 0 {
			size = defaultSlotSize
		}
		seg := geometry{nLocal: tc.nLocal, slots: got, slotSize: size}.segmentSize()
		if got > minDefaultSlots {
			assert.LessOrEqual(t, seg, segmentBudget+headerSize+pageSize, "%d ranks", tc.nLocal)
		}
	}
}

func TestSegmentsGoneAfterConnect(t *testing.T) {
	dir := shmDir(t)
	eps := connectAll(t, 3, smallConfig(dir), true)
	assert.Empty(t, dirEntries(t, dir), "segments must be unlinked once all ranks mapped them")
	ctx := testContext(t)
	require.NoError(t, eps[0].Send(ctx, 2, 1, []byte("hi")))
	got := make([]byte, 2)
	require.NoError(t, eps[2].Recv(ctx, 0, 1, got))
	assert.Equal(t, "hi", string(got))
}

func TestSingleRankHost(t *testing.T) {
	dir := shmDir(t)
	e, err := Connect(testContext(t), 3, []int{3}, 5, newJobID(t), smallConfig(dir))
	require.NoError(t, err)
	defer e.Close()
	assert.Empty(t, dirEntries(t, dir))
	ctx := testContext(t)
	require.NoError(t, e.Send(ctx, 3, 1, []byte("self")))
	got := make([]byte, 4)
	require.NoError(t, e.Recv(ctx, 3, 1, got))
	assert.Equal(t, "self", string(got))
	assert.ErrorIs(t, e.Send(ctx, 1, 1, got), errNotLocal)
	assert.ErrorIs(t, e.Recv(ctx, 4, 1, got), errNotLocal)
}

func TestConnectTimeoutLeavesNothing(t *testing.T) {
	dir := shmDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Connect(ctx, 0, []int{0, 1}, 2, newJobID(t), smallConfig(dir))
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Peer)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, dirEntries(t, dir))
}

func TestConfigMismatch(t *testing.T) {
	dir := shmDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	job := newJobID(t)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			cfg := smallConfig(dir)
			cfg.Slots += r
			e, err := Connect(ctx, r, []int{0, 1}, 2, job, cfg)
			if err == nil {
				e.Close()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.Error(t, err)
	}
	assert.Contains(t, errs[0].Error()+errs[1].Error(), "layout differs")
	assert.Empty(t, dirEntries(t, dir))
}

// TestStaleSegmentReplaced leaves a ready-looking segment of a dead process
// where rank 0's will be: rank 1 must not attach to it, and rank 0 must
// replace it.
func TestStaleSegmentReplaced(t *testing.T) {
	dir := shmDir(t)
	cfg, err := smallConfig(dir).withDefaults()
	require.NoError(t, err)
	job := newJobID(t)
	g := geometry{nLocal: 2, slots: cfg.Slots, slotSize: cfg.SlotSize}

	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	stale, err := createSegment(segmentPath(dir, job, 0), g.segmentSize())
	require.NoError(t, err)
	h := header{stale.mem}
	for off, v := range map[int]uint64{hVersion: segVersion, hNLocal: 2, hLocalIdx: 0,
		hSlots: uint64(cfg.Slots), hSlotSize: uint64(cfg.SlotSize), hPid: uint64(dead.Process.Pid)} {
		h.setField(off, v)
	}
	ns, err := pidNamespace()
	require.NoError(t, err)
	h.setField(hPidNS, ns)
	h.magic().Store(segMagic)
	require.NoError(t, stale.unmap())

	ctx := testContext(t)
	eps := make([]*Endpoint, 2)
	errs := make([]error, 2)
	found := make(chan struct{})
	var once sync.Once
	staleSeen = func(r int) {
		if r == 0 {
			once.Do(func() { close(found) })
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { eps[1], errs[1] = Connect(ctx, 1, []int{0, 1}, 2, job, cfg) })
	select { // rank 1 finds the stale segment first
	case <-found:
	case <-time.After(5 * time.Second):
		t.Error("rank 1 never found rank 0's stale segment")
	}
	wg.Go(func() { eps[0], errs[0] = Connect(ctx, 0, []int{0, 1}, 2, job, cfg) })
	wg.Wait()
	staleSeen = nil
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	defer eps[0].Close()
	defer eps[1].Close()
	require.NoError(t, eps[1].Send(ctx, 0, 1, []byte("fresh")))
	got := make([]byte, 5)
	require.NoError(t, eps[0].Recv(ctx, 1, 1, got))
	assert.Equal(t, "fresh", string(got))
	assert.Empty(t, dirEntries(t, dir))
}

// TestRingWrapsManyTimes sends many messages of varied sizes (inline, one
// slot, several slots) through an 8-slot ring while the receiver lags.
func TestRingWrapsManyTimes(t *testing.T) {
	eps := connectAll(t, 2, smallConfig(shmDir(t)), true)
	ctx := testContext(t)
	const n = 3000
	size := func(i int) int { return []int{0, 8, 40, 41, 100, 4096, 4097, 3 * 4096, 20000}[i%9] }
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			msg := pattern(size(i), byte(i))
			if len(msg) >= 8 {
				binary.LittleEndian.PutUint64(msg, uint64(i))
			}
			if err := eps[0].Send(ctx, 1, 7, msg); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := range n {
		got := make([]byte, size(i))
		require.NoError(t, eps[1].Recv(ctx, 0, 7, got))
		want := pattern(size(i), byte(i))
		if len(want) >= 8 {
			binary.LittleEndian.PutUint64(want, uint64(i))
		}
		require.True(t, bytes.Equal(want, got), "message %d (%d bytes) differs", i, size(i))
	}
	require.NoError(t, <-errc)
	require.NoError(t, eps[1].Close()) // stops the reader: its state can be read
	assert.Greater(t, eps[1].links[0].in.pos, uint64(100*8), "the ring wrapped many times")
}

// TestBothSendLargeFirst: two ranks each send a message far larger than the
// ring before receiving; the readers buffer it, so nobody deadlocks.
func TestBothSendLargeFirst(t *testing.T) {
	eps := connectAll(t, 2, smallConfig(shmDir(t)), true)
	ctx := testContext(t)
	const n = 4<<20 + 5
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			assert.NoError(t, eps[r].Send(ctx, 1-r, 3, pattern(n, byte(r))))
			got := make([]byte, n)
			assert.NoError(t, eps[r].Recv(ctx, 1-r, 3, got))
			assert.True(t, bytes.Equal(pattern(n, byte(1-r)), got))
		})
	}
	wg.Wait()
}

// TestSendTimeout covers a Send that gives up: before its first slot (the
// link stays usable) and in the middle of a message (the link is broken on
// both sides, since the receiver cannot resynchronise).
func TestSendTimeout(t *testing.T) {
	cfg := smallConfig(shmDir(t))
	eps := connectAll(t, 2, cfg, false)
	ctx := testContext(t)
	for i := range cfg.Slots { // fill the ring: the receiver does not read yet
		require.NoError(t, eps[0].Send(ctx, 1, 1, []byte{byte(i)}))
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, eps[0].Send(short, 1, 1, []byte{99}), context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second)

	eps[1].startReader()
	got := make([]byte, 1)
	for i := range cfg.Slots {
		require.NoError(t, eps[1].Recv(ctx, 0, 1, got))
		require.Equal(t, byte(i), got[0])
	}
	require.NoError(t, eps[0].Send(ctx, 1, 1, []byte{42}), "a send that gave up before its first slot leaves the link usable")
	require.NoError(t, eps[1].Recv(ctx, 0, 1, got))
	require.Equal(t, byte(42), got[0])
}

func TestSendTimeoutMidMessageBreaksLink(t *testing.T) {
	cfg := smallConfig(shmDir(t))
	eps := connectAll(t, 2, cfg, false)
	ctx := testContext(t)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	big := make([]byte, 4*cfg.Slots*cfg.SlotSize)
	require.ErrorIs(t, eps[0].Send(short, 1, 1, big), context.DeadlineExceeded)
	var pe *transport.PeerError
	require.ErrorAs(t, eps[0].Send(ctx, 1, 2, []byte("x")), &pe)
	assert.ErrorIs(t, pe, errLinkAborted)

	eps[1].startReader()
	err := eps[1].Recv(ctx, 0, 1, make([]byte, len(big)))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.Peer)
	assert.ErrorIs(t, err, errLinkAborted)
}

// TestCloseReleasesBlockedSend: a Send blocked on a full ring returns
// ErrClosed when its endpoint closes.
func TestCloseReleasesBlockedSend(t *testing.T) {
	cfg := smallConfig(shmDir(t))
	eps := connectAll(t, 2, cfg, false)
	ctx := testContext(t)
	done := make(chan error, 1)
	go func() { done <- eps[0].Send(ctx, 1, 1, make([]byte, 4*cfg.Slots*cfg.SlotSize)) }()
	waitSendAsleep(t, eps[0], 1)
	start := time.Now()
	require.NoError(t, eps[0].Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, transport.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("blocked Send not released by Close")
	}
	assert.Less(t, time.Since(start), time.Second)
	eps[1].startReader()
}

// TestCancelWakesSleepingSend: cancelling (not a deadline) ends a Send that
// sleeps on the futex at once, not at the next liveness tick.
func TestCancelWakesSleepingSend(t *testing.T) {
	cfg := smallConfig(shmDir(t))
	cfg.LivenessInterval = 5 * time.Second
	eps := connectAll(t, 2, cfg, false)
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- eps[0].Send(ctx, 1, 1, make([]byte, 2*cfg.Slots*cfg.SlotSize)) }()
	waitSendAsleep(t, eps[0], 1)
	start := time.Now()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Less(t, time.Since(start), 500*time.Millisecond)
	eps[1].startReader()
}

// TestManySmallMessagesSleeping runs a ping-pong where every wait ends on the
// futex: a lost wake-up would show as a stall of a liveness interval.
func TestManySmallMessagesSleeping(t *testing.T) {
	cfg := smallConfig(shmDir(t))
	cfg.SpinTime, cfg.YieldTime = -1, -1
	cfg.LivenessInterval = 10 * time.Second
	eps := connectAll(t, 2, cfg, true)
	ctx := testContext(t)
	const rounds = 300
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 8)
		for range rounds {
			if err := eps[1].Recv(ctx, 0, 1, buf); err != nil {
				errc <- err
				return
			}
			if err := eps[1].Send(ctx, 0, 2, buf); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 8)
	for i := range rounds {
		binary.LittleEndian.PutUint64(buf, uint64(i))
		require.NoError(t, eps[0].Send(ctx, 1, 1, buf))
		require.NoError(t, eps[0].Recv(ctx, 1, 2, buf))
		require.Equal(t, uint64(i), binary.LittleEndian.Uint64(buf))
	}
	require.NoError(t, <-errc)
	assert.Less(t, time.Since(start), 5*time.Second, "wake-ups lost")
}

func TestErrorsNamePeer(t *testing.T) {
	eps := connectAll(t, 3, smallConfig(shmDir(t)), true)
	ctx := testContext(t)
	require.NoError(t, eps[1].Close())
	var pe *transport.PeerError
	require.ErrorAs(t, eps[0].Send(ctx, 1, 1, []byte("x")), &pe)
	assert.Equal(t, 1, pe.Peer)
	assert.Equal(t, "send", pe.Op)
	assert.True(t, errors.Is(pe, errPeerClosed))
	require.ErrorAs(t, eps[2].Recv(ctx, 1, 1, make([]byte, 1)), &pe)
	assert.Equal(t, 1, pe.Peer)
}

// waitSendAsleep waits until a Send of e to peer sleeps on the futex for
// space in the ring (its waiters word is set): the ring is full and the
// Send is blocked.
func waitSendAsleep(t *testing.T, e *Endpoint, peer int) {
	t.Helper()
	w := e.links[peer].out.r.spaceWaiters()
	require.Eventually(t, func() bool { return w.Load() != 0 }, 5*time.Second, 100*time.Microsecond,
		"the send to rank %d never went to sleep", peer)
}
