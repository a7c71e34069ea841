package arena

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testConfig is small and quick to give up, for tests.
func testConfig(dir string) Config {
	return Config{
		Dir:              dir,
		InlineBytes:      256,
		DataBytes:        64 << 10,
		SpinTime:         5 * time.Microsecond,
		YieldTime:        50 * time.Microsecond,
		LivenessInterval: 20 * time.Millisecond,
	}
}

// connectAll connects p arenas (global ranks 0..p-1) concurrently in one
// process and closes them when the test ends.
func connectAll(t *testing.T, p int, cfg Config) []*Arena {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	local := make([]int, p)
	for i := range local {
		local[i] = i
	}
	job := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	arenas := make([]*Arena, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r := range p {
		wg.Go(func() { arenas[r], errs[r] = Connect(ctx, r, local, job, cfg) })
	}
	wg.Wait()
	for r := range p {
		require.NoError(t, errs[r], "rank %d", r)
	}
	t.Cleanup(func() {
		for _, a := range arenas {
			require.NoError(t, a.Close())
		}
	})
	return arenas
}

// segmentFiles lists the arena segment files left in dir.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), segmentPrefix) {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	return names
}

// shmDir is a fresh directory on /dev/shm (a real tmpfs) when there is one,
// else a temporary directory.
func shmDir(t *testing.T) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "hccl-go-arena-test-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}
