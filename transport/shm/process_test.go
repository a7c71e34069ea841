package shm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// Cross-process tests re-run this test binary as helper processes: the
// environment variable helperEnv names the helper's role, and the helper
// exits before any test runs.
const (
	helperEnv = "HCCL_GO_SHM_TEST_HELPER"
	jobEnv    = "HCCL_GO_SHM_TEST_JOB"
	rankEnv   = "HCCL_GO_SHM_TEST_RANK"
	dirEnv    = "HCCL_GO_SHM_TEST_DIR"
	cmaEnv    = "HCCL_GO_SHM_TEST_NO_CMA"
	// profEnv, if set, names a file for the helper's CPU profile.
	profEnv = "HCCL_GO_SHM_TEST_HELPER_CPUPROFILE"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		if err := runHelper(role); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helpers are the roles a helper process can play.
var helpers = map[string]func(ctx context.Context, e *Endpoint) error{
	"exchange": helperExchange,
	"victim":   helperVictim,
	"survivor": helperSurvivor,
	"bench":    helperBench,
}

// runHelper connects as rank $rankEnv of a 2-rank host and plays role.
func runHelper(role string) error {
	fn, ok := helpers[role]
	if !ok {
		return fmt.Errorf("unknown role %q", role)
	}
	rank, err := strconv.Atoi(os.Getenv(rankEnv))
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := smallConfig(os.Getenv(dirEnv))
	if role == "bench" {
		cfg = Config{Dir: os.Getenv(dirEnv)}
	}
	// The victim stops inside a ring transfer, which single-copy would skip.
	cfg.DisableCMA = os.Getenv(cmaEnv) != "" || role == "victim"
	e, err := Connect(ctx, rank, []int{0, 1}, 2, os.Getenv(jobEnv), cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	if path := os.Getenv(profEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return fn(ctx, e)
}

// exchangeSizes cover inline, single-slot, multi-slot and ring-wrapping
// messages.
var exchangeSizes = []int{0, 1, 40, 41, 4096, 65536, 1 << 20, 8<<20 + 3}

// helperExchange sends every size to the peer while receiving the same from
// it, and checks the payloads.
func helperExchange(ctx context.Context, e *Endpoint) error {
	peer := 1 - e.Rank()
	for i, n := range exchangeSizes {
		tag := transport.Tag(i)
		sent := make(chan error, 1)
		go func() { sent <- e.Send(ctx, peer, tag, pattern(n, byte(e.Rank()+i))) }()
		got := make([]byte, n)
		if err := e.Recv(ctx, peer, tag, got); err != nil {
			return err
		}
		if err := <-sent; err != nil {
			return err
		}
		if !bytes.Equal(got, pattern(n, byte(peer+i))) {
			return fmt.Errorf("message of %d bytes differs", n)
		}
	}
	fmt.Println("ok")
	return nil
}

// helperVictim starts a large send and stops in its middle, to be killed.
func helperVictim(ctx context.Context, e *Endpoint) error {
	e.testAfterSlot = func(pos uint64) {
		if pos == 3 {
			fmt.Println("MID")
			<-ctx.Done() // killed long before
		}
	}
	return e.Send(ctx, 0, 1, make([]byte, 1<<20))
}

// helperSurvivor waits for the victim's message and reports how its death
// was noticed.
func helperSurvivor(ctx context.Context, e *Endpoint) error {
	err := e.Recv(ctx, 1, 1, make([]byte, 1<<20))
	var pe *transport.PeerError
	if !errors.As(err, &pe) {
		return fmt.Errorf("recv: want a PeerError, got %v", err)
	}
	fmt.Printf("PEERERR %d %d %v\n", pe.Peer, time.Now().UnixNano(), errors.Is(err, errProcessGone))
	err = e.Send(ctx, 1, 2, []byte("anyone?"))
	if !errors.As(err, &pe) || pe.Peer != 1 {
		return fmt.Errorf("send to the dead peer: want a PeerError, got %v", err)
	}
	fmt.Println("SENDERR")
	return nil
}

// helperProc is a running helper process.
type helperProc struct {
	cmd   *exec.Cmd
	lines chan string
	errb  *syncBuffer
}

// syncBuffer collects a helper's stderr while tests may read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startHelper runs this test binary as rank of job in role.
func startHelper(t testing.TB, role, job, dir string, rank int, extraEnv ...string) *helperProc {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, jobEnv+"="+job, dirEnv+"="+dir,
		rankEnv+"="+strconv.Itoa(rank))
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	h := &helperProc{cmd: cmd, lines: make(chan string, 100), errb: &syncBuffer{}}
	cmd.Stderr = h.errb
	require.NoError(t, cmd.Start())
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return h
}

// line returns the helper's next line of output.
func (h *helperProc) line(t testing.TB, timeout time.Duration) string {
	select {
	case l, ok := <-h.lines:
		require.True(t, ok, "helper ended early; stderr: %s", h.errb.String())
		return l
	case <-time.After(timeout):
		t.Fatalf("no output from helper within %v; stderr: %s", timeout, h.errb.String())
		return ""
	}
}

// wait waits for the helper to exit successfully.
func (h *helperProc) wait(t testing.TB) {
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "helper failed; stderr: %s", h.errb.String())
	case <-time.After(30 * time.Second):
		t.Fatal("helper did not exit")
	}
}

func TestProcessExchange(t *testing.T) {
	for _, noCMA := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCMA=%v", noCMA), func(t *testing.T) {
			dir := shmDir(t)
			job := newJobID(t)
			env := []string{}
			if noCMA {
				env = append(env, cmaEnv+"=1")
			}
			var hs []*helperProc
			for r := range 2 {
				hs = append(hs, startHelper(t, "exchange", job, dir, r, env...))
			}
			for _, h := range hs {
				assert.Equal(t, "ok", h.line(t, 30*time.Second))
				h.wait(t)
			}
		})
	}
}

// TestProcessKilledMidMessage kills a sender with SIGKILL in the middle of a
// message: the receiver gets a PeerError naming it within about a second,
// even though the dead process is a zombie (not reaped) meanwhile, and
// nothing is left in /dev/shm.
func TestProcessKilledMidMessage(t *testing.T) {
	dir := shmDir(t)
	job := newJobID(t)
	survivor := startHelper(t, "survivor", job, dir, 0)
	victim := startHelper(t, "victim", job, dir, 1)
	require.Equal(t, "MID", victim.line(t, 30*time.Second))
	require.NoError(t, victim.cmd.Process.Kill())
	killed := time.Now()

	fields := strings.Fields(survivor.line(t, 10*time.Second))
	require.Len(t, fields, 4)
	assert.Equal(t, "PEERERR", fields[0])
	assert.Equal(t, "1", fields[1], "the error names the dead rank")
	assert.Equal(t, "true", fields[3], "the cause is the process exit")
	ns, err := strconv.ParseInt(fields[2], 10, 64)
	require.NoError(t, err)
	latency := time.Unix(0, ns).Sub(killed)
	t.Logf("death noticed after %v", latency)
	assert.Less(t, latency, 2*time.Second)
	assert.Equal(t, "SENDERR", survivor.line(t, 10*time.Second))
	survivor.wait(t)
	_ = victim.cmd.Wait() // reap the zombie only now
	assert.Empty(t, dirEntries(t, dir))
}
