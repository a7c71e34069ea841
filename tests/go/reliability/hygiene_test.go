package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// segmentName matches the segment files of transport/shm and transport/arena.
var segmentName = regexp.MustCompile(`^hccl-go-(arena-)?[0-9a-f]{16}-[0-9]+$`)

// resources counts what a communicator may leak.
type resources struct {
	fds, threads, goroutines, segments int
}

func (r resources) String() string {
	return fmt.Sprintf("%d fds, %d threads, %d goroutines, %d /dev/shm segments", r.fds, r.threads, r.goroutines, r.segments)
}

func countResources(t *testing.T) resources {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	threads := 0
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return resources{fds: len(fds), threads: threads, goroutines: runtime.NumGoroutine(), segments: len(segments(t))}
}

func segments(t *testing.T) []string {
	entries, err := os.ReadDir("/dev/shm")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if segmentName.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// cycle creates a 4-rank single-host communicator in this process (shared
// memory, arenas and TCP links), runs one all_reduce and destroys it.
func cycle(t *testing.T) {
	const n = 4
	cfg := pgbackend.DefaultConfig()
	cfg.Timeout, cfg.ConnectTimeout = 20*time.Second, 20*time.Second
	cfg.TraceDir = t.TempDir()
	ls := make([]*tcp.Listener, n)
	addrs := make([]string, n)
	hosts := make([]string, n)
	for r := range n {
		l, err := pgbackend.Listen(cfg)
		require.NoError(t, err)
		ls[r], addrs[r], hosts[r] = l, l.Addr(), "one-host"
	}
	cs := make([]*pgbackend.Communicator, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			rv := pgbackend.Rendezvous{Rank: r, Addrs: addrs, HostIDs: hosts, Secret: []byte("hygiene")}
			cs[r], errs[r] = pgbackend.Connect(context.Background(), ls[r], rv, cfg)
			if errs[r] != nil {
				return
			}
			buf := make([]byte, 64<<10)
			w, err := cs[r].AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, pgbackend.StreamDefault)
			if err == nil {
				err = w.Wait(context.Background(), 20*time.Second)
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
	}
	for r := range n {
		wg.Go(func() { errs[r] = cs[r].Destroy() })
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errs[r], "destroy rank %d", r)
	}
}

// Init/destroy cycles leave no file descriptor, /dev/shm segment, thread
// or goroutine behind. HCCL_GO_REL_CYCLES sets the count (default 100; the
// acceptance run uses 1000).
func TestInitDestroyCyclesLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("many init/destroy cycles")
	}
	cycles := 100
	if s := os.Getenv("HCCL_GO_REL_CYCLES"); s != "" {
		var err error
		cycles, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	for range 5 { // warm up: the runtime's own threads and pools
		cycle(t)
	}
	before := settle(t, countResources(t))
	start := time.Now()
	for i := range cycles {
		cycle(t)
		if i == cycles/2 {
			t.Logf("after %d cycles: %v", i+1, countResources(t))
		}
	}
	after := settle(t, before)
	t.Logf("%d cycles in %v; before: %v; after: %v", cycles, time.Since(start).Round(time.Millisecond), before, after)
	assert.LessOrEqual(t, after.fds, before.fds, "file descriptors leaked")
	assert.LessOrEqual(t, after.goroutines, before.goroutines, "goroutines leaked")
	// Other tests on this host create and remove segments too: only a growth
	// that stays is ours.
	assert.LessOrEqual(t, after.segments, before.segments, "segments left in /dev/shm")
	// The Go runtime keeps idle threads for reuse; a leak would grow with
	// the cycle count.
	assert.LessOrEqual(t, after.threads, before.threads+8, "threads leaked")
}

// settle waits up to 2 s for goroutines and fds to drop to want's level
// (exiting goroutines and closing sockets finish asynchronously).
func settle(t *testing.T, want resources) resources {
	deadline := time.Now().Add(2 * time.Second)
	for {
		r := countResources(t)
		// Segments of other packages' tests come and go meanwhile (go test
		// runs packages at once): a transient one must not count as ours.
		if (r.goroutines <= want.goroutines && r.fds <= want.fds && r.segments <= want.segments) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

// Segments are created with mode 0600 and unlinked once every rank mapped
// them: a rank that is late to join finds the others' segments waiting.
func TestSegmentsArePrivateAndUnlinked(t *testing.T) {
	if testing.Short() {
		t.Skip("starts communicators")
	}
	before := map[string]bool{}
	for _, s := range segments(t) {
		before[s] = true
	}
	seen := map[string]os.FileMode{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			entries, _ := os.ReadDir("/dev/shm")
			for _, e := range entries {
				if segmentName.MatchString(e.Name()) && !before[e.Name()] {
					if info, err := os.Stat(filepath.Join("/dev/shm", e.Name())); err == nil {
						seen[e.Name()] = info.Mode().Perm()
					}
				}
			}
			time.Sleep(time.Millisecond) // poll interval
		}
	})
	// No rank is held back: every rank first links with all others over
	// TCP, then creates its segments, so a late rank would delay them all
	// alike. A segment lives from its creation until the last local rank
	// has mapped it, which the 1 ms poll above catches.
	cycle(t)
	close(stop)
	wg.Wait()
	require.NotEmpty(t, seen, "no segment observed during set-up")
	for name, mode := range seen {
		assert.Equal(t, os.FileMode(0o600), mode, name)
	}
	// The watcher also saw other packages' segments (go test runs packages
	// at once); theirs are unlinked within milliseconds, as ours must be,
	// so a segment seen that is still there after a settling time is left.
	left := func() int {
		n := 0
		for _, s := range segments(t) {
			if _, ours := seen[s]; ours {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(2 * time.Second); left() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	assert.Zero(t, left(), "segments still in /dev/shm after set-up and destroy")
	t.Logf("%d segments observed during set-up, all 0600, none left", len(seen))
}
