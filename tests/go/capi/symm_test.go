package capi

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCAPISymm runs tests/c/capi_symm_test.c (symmetric memory: peer
// pointers, put/get with offsets, signals, barriers, bad input, lifetime
// past the communicator) at worlds 2 and 3, and checks that no segment is
// left in /dev/shm.
func TestCAPISymm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shared library")
	}
	bin := buildCProgram(t, t.TempDir(), "capi_symm_test")
	before, err := filepath.Glob("/dev/shm/hccl-go-symm-*")
	require.NoError(t, err)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("world%d", n), func(t *testing.T) {
			runRanks(t, bin, n, append(os.Environ(), "HCCL_GO_MAXPROCS=2"))
		})
	}
	after, err := filepath.Glob("/dev/shm/hccl-go-symm-*")
	require.NoError(t, err)
	require.Subset(t, before, after, "segments left in /dev/shm")
}
