package shm

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// smallConfig makes rings tiny, so that tests wrap them many times and fill
// them easily.
func smallConfig(dir string) Config {
	return Config{Dir: dir, Slots: 8, SlotSize: 4096, LivenessInterval: 50 * time.Millisecond}
}

var jobCounter atomic.Uint64

// newJobID returns a job ID unique to this test and process.
func newJobID(t testing.TB) string {
	return fmt.Sprintf("%s/%d/%d/%d", t.Name(), os.Getpid(), time.Now().UnixNano(), jobCounter.Add(1))
}

// shmDir makes a private directory in /dev/shm for a test's segments and
// checks, at the end, that none was left behind.
func shmDir(t testing.TB) string {
	dir, err := os.MkdirTemp("/dev/shm", "hccl-go-test-")
	require.NoError(t, err)
	t.Cleanup(func() {
		ents, err := os.ReadDir(dir)
		if err == nil && len(ents) > 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("segments left in %s: %v", dir, names)
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// dirEntries lists the names in dir.
func dirEntries(t testing.TB, dir string) []string {
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// connectAll connects size ranks of one host in this process, concurrently,
// and closes them at the end of the test. start=false leaves their readers
// stopped (see startReader).
func connectAll(t testing.TB, size int, cfg Config, start bool) []*Endpoint {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	job := newJobID(t)
	peers := make([]int, size)
	for i := range peers {
		peers[i] = i
	}
	eps := make([]*Endpoint, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			eps[r], errs[r] = connect(ctx, r, peers, size, job, cfg)
			if errs[r] == nil && start {
				eps[r].startReader()
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, e := range eps {
			if e != nil {
				require.NoError(t, e.Close())
			}
		}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	return eps
}

// asEndpoints converts for the conformance suite.
func asEndpoints(eps []*Endpoint) []transport.Endpoint {
	out := make([]transport.Endpoint, len(eps))
	for i, e := range eps {
		out[i] = e
	}
	return out
}

// pattern returns n bytes that depend on seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed ^ byte(i>>11)
	}
	return b
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
