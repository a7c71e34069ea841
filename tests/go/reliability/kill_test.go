package reliability

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noticeDeadline bounds the time from a kill to every survivor's error. The
// library notices in 0.1-0.3 s here; the margin is for a loaded machine.
const noticeDeadline = 2 * time.Second

// killRoutes are the ways a single-host job moves data; each is tried.
var killRoutes = []struct {
	name string
	env  []string
}{
	{"arena", nil},
	{"shm-messages", []string{"HCCL_GO_SHM_COLLECTIVES=0"}},
	{"tcp", []string{"HCCL_GO_TRANSPORT=tcp"}},
}

// trials is HCCL_GO_REL_TRIALS (default 3) per route.
func trials(t *testing.T) int {
	n := 3
	if s := os.Getenv("HCCL_GO_REL_TRIALS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	return n
}

// A rank killed with SIGKILL during a stream of all_reduces at world 4:
// every survivor's op fails with an error naming the dead rank and the op,
// within noticeDeadline (the op timeout is 60 s: the death must be noticed, not
// waited out), and so does every later op, at once.
func TestKillNineAtWorldFour(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const world = 4
	for _, route := range killRoutes {
		t.Run(route.name, func(t *testing.T) {
			var worst float64
			for trial := range trials(t) {
				rng := rand.New(rand.NewPCG(uint64(trial), uint64(len(route.name))))
				victim, killAfter := rng.IntN(world), 3+rng.IntN(40)
				reports := runKillTrial(t, route.env, world, victim, killAfter)
				for _, r := range reports {
					for _, msg := range []string{r.First, r.Later} {
						assert.Contains(t, msg, fmt.Sprintf("rank %d", victim), "trial %d rank %d", trial, r.Rank)
						assert.Contains(t, msg, "allreduce seq", "trial %d rank %d", trial, r.Rank)
					}
					assert.Less(t, r.LatencyMs, float64(noticeDeadline.Milliseconds()), "trial %d rank %d noticed the death late", trial, r.Rank)
					assert.Less(t, r.LaterMs, 100.0, "a later op must fail at once")
					worst = max(worst, r.LatencyMs)
				}
			}
			t.Logf("%s: %d/%d trials; slowest survivor failed %.1f ms after the kill", route.name, trials(t), trials(t), worst)
		})
	}
}

// runKillTrial starts world rank processes of this test binary and returns
// the survivors' reports.
func runKillTrial(t *testing.T, env []string, world, victim, killAfter int) []survivorReport {
	t.Helper()
	dir := t.TempDir()
	procs := make([]*exec.Cmd, world)
	outs := make([]*bytes.Buffer, world)
	for r := range world {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env...)
		cmd.Env = append(cmd.Env,
			fmt.Sprintf("%s=%d", envRank, r), fmt.Sprintf("%s=%d", envWorld, world), envDir+"="+dir,
			fmt.Sprintf("%s=%d", envVictim, victim), fmt.Sprintf("%s=%d", envKillAfter, killAfter))
		outs[r] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[r], outs[r]
		require.NoError(t, cmd.Start())
		procs[r] = cmd
	}
	done := make(chan struct{})
	go func() {
		for _, p := range procs {
			_ = p.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(noticeDeadline + 60*time.Second):
		for _, p := range procs {
			_ = p.Process.Kill()
		}
		<-done
		t.Fatalf("ranks did not finish; outputs:\n%s", joinOutputs(outs))
	}
	var reports []survivorReport
	for r, p := range procs {
		if r == victim {
			ws, _ := p.ProcessState.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "victim %d: %v\n%s", r, p.ProcessState, outs[r])
			continue
		}
		require.True(t, p.ProcessState.Success(), "rank %d: %v\n%s", r, p.ProcessState, outs[r])
		rep, err := lastReport(outs[r].String())
		require.NoError(t, err, "rank %d output:\n%s", r, outs[r])
		reports = append(reports, rep)
	}
	require.Len(t, reports, world-1)
	return reports
}

func lastReport(out string) (survivorReport, error) {
	var rep survivorReport
	var last string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "{") {
			last = sc.Text()
		}
	}
	if last == "" {
		return rep, fmt.Errorf("no report")
	}
	return rep, json.Unmarshal([]byte(last), &rep)
}

func joinOutputs(outs []*bytes.Buffer) string {
	var parts []string
	for r, o := range outs {
		parts = append(parts, fmt.Sprintf("--- rank %d:\n%s", r, o))
	}
	return strings.Join(slices.Clip(parts), "\n")
}
