//go:build linux

package arena

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pinToFirstCPU narrows the calling thread to the first CPU it may use and
// returns the set it had.
func pinToFirstCPU(t *testing.T) unix.CPUSet {
	var had unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &had))
	for c := range len(had) * 64 {
		if had.IsSet(c) {
			var one unix.CPUSet
			one.Set(c)
			require.NoError(t, unix.SchedSetaffinity(0, &one))
			break
		}
	}
	return had
}

func unpin(t *testing.T, had unix.CPUSet) { require.NoError(t, unix.SchedSetaffinity(0, &had)) }
