package capi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCAPIFastLane runs tests/c/capi_lane_test.c: blocking all_reduces in
// the C fast lane give the queued path's results for every dtype and op,
// also when only some ranks take the lane; mismatches, dead peers and
// aborts during a wait in the lane become errors.
func TestCAPIFastLane(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shared library")
	}
	bin := buildCProgram(t, t.TempDir(), "capi_lane_test")
	cases := []struct {
		name   string
		nranks int
		mode   string
		lanes  []string // HCCL_GO_FAST_LANE per rank
	}{
		{"results/world2", 2, "results", []string{"1", "1"}},
		{"results/world3", 3, "results", []string{"1", "1", "1"}},
		{"results/lane meets queued", 3, "results", []string{"1", "0", "1"}},
		{"dead peer", 2, "dead-peer", []string{"1", "1"}},
		{"abort", 2, "abort", []string{"1", "1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			runRanksWith(t, bin, c.nranks, func(r int) []string {
				env := withoutEnv(os.Environ(), "HCCL_GO_FAST_LANE")
				return append(env, "HCCL_GO_MAXPROCS=2", "HCCL_GO_FAST_LANE="+c.lanes[r], "HCCL_GO_TEST_TMP="+tmp,
					"HCCL_GO_TRACE_DIR="+tmp)
			}, c.mode)
		})
	}
}

// runRanksWith is runRanks with an environment per rank and extra
// arguments after the rendezvous directory.
func runRanksWith(t *testing.T, bin string, nranks int, env func(rank int) []string, args ...string) {
	rv := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([]string, nranks)
	errs := make([]error, nranks)
	for r := range nranks {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, bin, append([]string{fmt.Sprint(r), fmt.Sprint(nranks), rv}, args...)...)
			cmd.Env = env(r)
			out, err := cmd.CombinedOutput()
			outs[r], errs[r] = string(out), err
		})
	}
	wg.Wait()
	for r := range nranks {
		require.NoError(t, errs[r], "rank %d:\n%s", r, outs[r])
		require.Contains(t, outs[r], fmt.Sprintf("PASS rank %d", r), "rank %d:\n%s", r, outs[r])
	}
	t.Logf("rank 0 output:\n%s", outs[0])
}
