package shm

import (
	"sync/atomic"

	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

// ringBell bumps the eventcount word and wakes its sleepers, but only when the
// waiters flag says someone may sleep, so a busy link makes no system calls.
func ringBell(waiters, word *atomic.Uint32) {
	if waiters.Load() != 0 {
		word.Add(1)
		futex.WakeAll(word)
	}
}
