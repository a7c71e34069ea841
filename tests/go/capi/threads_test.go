package capi

import (
	"os"
	"testing"
)

// TestCAPIThreadsGoMaxProcs runs tests/c/capi_threads_test.c: under the
// automatic policy GOMAXPROCS stays at its floor with one calling thread,
// reaches the cap with 41 alive, and comes back to the floor once 40 of them
// have exited.
func TestCAPIThreadsGoMaxProcs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shared library")
	}
	bin := buildCProgram(t, t.TempDir(), "capi_threads_test")
	runRanks(t, bin, 1, withoutEnv(os.Environ(), "HCCL_GO_MAXPROCS"))
}
