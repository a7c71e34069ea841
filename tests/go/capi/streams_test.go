package capi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCAPIStreams runs tests/c/capi_streams_test.c (streams, events and
// cross-stream waits through the C API) at worlds 2 and 3, with the
// default stream count and with three streams.
func TestCAPIStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shared library")
	}
	dir := t.TempDir()
	bin := buildCProgram(t, dir, "capi_streams_test")
	cases := []struct {
		nranks  int
		streams string // HCCL_GO_STREAMS, "" for unset
	}{{2, ""}, {3, "3"}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("world%d/streams=%s", c.nranks, c.streams), func(t *testing.T) {
			env := append(os.Environ(), "HCCL_GO_MAXPROCS=2")
			env = withoutEnv(env, "HCCL_GO_STREAMS")
			if c.streams != "" {
				env = append(env, "HCCL_GO_STREAMS="+c.streams)
			}
			runRanks(t, bin, c.nranks, env)
		})
	}
}

// buildCProgram builds libhccl_go.so and tests/c/<name>.c into dir.
func buildCProgram(t *testing.T, dir, name string) string {
	root := repoRoot(t)
	lib := filepath.Join(dir, "libhccl_go.so")
	build := exec.Command("go", "build", "-buildmode=c-shared",
		"-ldflags=-extldflags=-Wl,-soname,libhccl_go.so", "-o", lib, "./export")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build -buildmode=c-shared: %s", out)
	bin := filepath.Join(dir, name)
	cc := exec.Command("gcc", "-O1", "-Wall", "-Werror", "-o", bin,
		filepath.Join(root, "tests", "c", name+".c"),
		"-I", filepath.Join(root, "include"), "-L", dir, "-lhccl_go", "-Wl,-rpath,"+dir)
	out, err = cc.CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)
	return bin
}

// runRanks runs bin as nranks processes of one job and requires each to
// pass.
func runRanks(t *testing.T, bin string, nranks int, env []string) {
	rv := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([]string, nranks)
	errs := make([]error, nranks)
	for r := range nranks {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, bin, fmt.Sprint(r), fmt.Sprint(nranks), rv)
			cmd.Env = env
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

func withoutEnv(env []string, key string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			kept = append(kept, kv)
		}
	}
	return kept
}
