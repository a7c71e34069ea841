package intra

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Tests between two processes: this one is local rank 0, a re-executed
// test binary (startHelper) rank 1.

// helperArena starts the helper in role and connects rank 0 of their
// 2-rank arena, configured by cfg(dir), with a context of the given
// timeout. The helper is killed, the arena closed and the context ended
// when the test ends. It returns the shared-memory directory too.
func helperArena(t *testing.T, role, jobPrefix string, timeout time.Duration,
	cfg func(dir string) arena.Config) (context.Context, *arena.Arena, *exec.Cmd, string) {
	t.Helper()
	dir := shmDir(t)
	job := fmt.Sprintf("%s-%d-%d", jobPrefix, os.Getpid(), time.Now().UnixNano())
	cmd := startHelper(t, role, job, dir)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	a, err := arena.Connect(ctx, 0, []int{0, 1}, job, cfg(dir))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return ctx, a, cmd, dir
}

// smallDataArena is the arena of the kill tests: 1 MiB of data, so that
// their ops take several rounds.
func smallDataArena(dir string) arena.Config { return arena.Config{Dir: dir, DataBytes: 1 << 20} }

// killMidOps kills the helper 100 ms from now while run issues ops with
// seq 2, 3, ... until one fails, and checks that the failure names local
// rank 1 as gone within 1.5 s of the kill. The ops run back to back (op 1
// has completed, so both ranks are in them): the kill lands in one of them
// whatever the delay; the delay only lets several ops complete first.
func killMidOps(t *testing.T, cmd *exec.Cmd, run func(seq uint64) error) {
	t.Helper()
	killed := make(chan time.Time, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		killed <- time.Now()
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}()
	var err error
	for seq := uint64(2); err == nil; seq++ {
		err = run(seq)
	}
	detected := time.Since(<-killed)
	t.Logf("detected %v after the kill: %v", detected, err)
	var pe *arena.PeerError
	require.ErrorAs(t, err, &pe, "%v", err)
	assert.Equal(t, 1, pe.Rank)
	assert.ErrorIs(t, err, arena.ErrPeerGone)
	assert.Contains(t, err.Error(), "peer rank 1")
	assert.Less(t, detected, 1500*time.Millisecond)
}

// spinAllReduce runs in-place all_reduces of n bytes (single-copy with sc,
// nil: none) until one fails: the "spin" helpers, until killed.
func spinAllReduce(ctx context.Context, a *arena.Arena, sc *SingleCopy, n int) error {
	buf := make([]byte, n)
	for seq := uint64(1); ; seq++ {
		if err := AllReduceWith(ctx, a, sc, seq, buf, buf, reduce.Float32, reduce.Sum, 0); err != nil {
			return err
		}
	}
}
