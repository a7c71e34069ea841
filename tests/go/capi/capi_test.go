// Package capi tests the C API end to end: it builds the shared library and
// the C test program (tests/c/capi_test.c), runs one process per rank, and
// checks that every rank passes.
package capi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// buildProgram builds libhccl_go.so and the C test program into dir, and
// checks that the library carries its SONAME.
func buildProgram(t *testing.T, dir string) string {
	bin := buildCProgram(t, dir, "capi_test")
	// The SONAME lets the library be found and versioned by the loader.
	out, err := exec.Command("objdump", "-p", filepath.Join(dir, "libhccl_go.so")).CombinedOutput()
	if err == nil {
		require.Contains(t, string(out), "SONAME               libhccl_go.so")
	}
	return bin
}

func TestCAPITwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shared library")
	}
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	runs := []struct {
		nranks int
		auth   string   // CAPI_TEST_AUTH: how capi_test.c authenticates its communicator
		env    []string // added to each rank's environment
	}{
		{nranks: 2},
		{nranks: 3},
		{nranks: 2, auth: "env", env: []string{"HCCL_GO_JOB_SECRET=from-the-launcher"}},
		{nranks: 2, auth: "none"},
	}
	for _, run := range runs {
		nranks := run.nranks
		name := fmt.Sprintf("world%d", nranks)
		if run.auth != "" {
			name += "/auth=" + run.auth
		}
		t.Run(name, func(t *testing.T) {
			rv := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			outs := make([]string, nranks)
			errs := make([]error, nranks)
			for r := 0; r < nranks; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.CommandContext(ctx, bin, fmt.Sprint(r), fmt.Sprint(nranks), rv)
					cmd.Env = append(withoutEnv(os.Environ(), "HCCL_GO_JOB_SECRET"), "HCCL_GO_MAXPROCS=2", "CAPI_TEST_AUTH="+run.auth)
					cmd.Env = append(cmd.Env, run.env...)
					out, err := cmd.CombinedOutput()
					outs[r], errs[r] = string(out), err
				}()
			}
			wg.Wait()
			for r := 0; r < nranks; r++ {
				if errs[r] != nil {
					t.Logf("rank %d failed (%v):\n%s", r, errs[r], outs[r])
				}
			}
			for r := 0; r < nranks; r++ {
				require.NoError(t, errs[r], "rank %d:\n%s", r, outs[r])
				require.True(t, strings.Contains(outs[r], fmt.Sprintf("PASS rank %d", r)), "rank %d:\n%s", r, outs[r])
			}
			t.Logf("rank 0 output:\n%s", outs[0])
		})
	}
}
