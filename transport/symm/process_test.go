package symm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// Cross-process tests re-run this test binary as a helper rank: helperEnv
// names its role; it exchanges records through files in dirEnv.
const (
	helperEnv = "HCCL_GO_SYMM_TEST_HELPER"
	dirEnv    = "HCCL_GO_SYMM_TEST_DIR"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		if err := runHelper(role, os.Getenv(dirEnv)); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fileExchange all-gathers through files rec-<rank> in dir (one round).
func fileExchange(dir string, rank, size int) Exchange {
	return func(ctx context.Context, send, recv []byte) error {
		tmp := filepath.Join(dir, fmt.Sprintf("tmp-%d", rank))
		if err := os.WriteFile(tmp, send, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("rec-%d", rank))); err != nil {
			return err
		}
		for r := range size {
			for {
				b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rec-%d", r)))
				if err == nil {
					copy(recv[r*len(send):], b)
					break
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
}

// runHelper plays rank 1 of a 2-rank window: it allocates, says so on
// stdout, and then sleeps until killed ("victim").
func runHelper(role, dir string) error {
	w, err := Alloc(context.Background(), Spec{Rank: 1, Size: 2, Bytes: 4096, HostID: "h", Dir: dir, Timeout: 20 * time.Second},
		fileExchange(dir, 1, 2))
	if err != nil {
		return err
	}
	if err := w.Put([]byte("from rank 1"), 0, 0); err != nil {
		return err
	}
	fmt.Println("ready")
	if role == "victim" {
		time.Sleep(time.Minute)
	}
	return w.Close()
}

func TestDeadPeerDuringWaitSignal(t *testing.T) {
	shm := tempDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=victim", dirEnv+"="+shm)
	// The exchange files (rec-*) live beside the segments; they are not segments.
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	w, err := Alloc(context.Background(), Spec{Rank: 0, Size: 2, Bytes: 4096, HostID: "h", Dir: shm, Timeout: 20 * time.Second},
		fileExchange(shm, 0, 2))
	require.NoError(t, err)
	defer w.Close()
	buf := make([]byte, 16)
	_, err = out.Read(buf)
	require.NoError(t, err)
	require.Contains(t, string(buf), "ready")
	region, err := w.Region(0)
	require.NoError(t, err)
	assert.Equal(t, "from rank 1", string(region[:11]))
	requireEmpty(t, shm) // both segments unlinked: a kill leaves nothing

	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = cmd.Process.Kill() // SIGKILL
	}()
	start := time.Now()
	err = w.WaitSignal(context.Background(), 1, 10*time.Second)
	elapsed := time.Since(start)
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Peer)
	assert.Contains(t, err.Error(), "rank 1 (pid "+strconv.Itoa(cmd.Process.Pid)+") died or closed")
	assert.Less(t, elapsed, 2*time.Second)
	requireEmpty(t, shm)
	// The dead rank's memory stays mapped here: stores to it are harmless.
	peer, err := w.Region(1)
	require.NoError(t, err)
	peer[0] = 1
}
