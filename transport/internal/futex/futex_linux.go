// Package futex waits on and wakes words of shared memory across processes,
// for the shared-memory transports (shm, arena). FUTEX_PRIVATE_FLAG is
// deliberately absent: waiter and waker are in different processes.
package futex

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const (
	opWait = 0 // FUTEX_WAIT
	opWake = 1 // FUTEX_WAKE
)

// Wait sleeps while *addr == val, for at most d. Returning early (value
// already changed, interrupted, woken, timed out) is not an error: callers
// re-check their condition in a loop.
func Wait(addr *atomic.Uint32, val uint32, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	ts := syscall.NsecToTimespec(int64(d))
	_, _, errno := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		opWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
	switch errno {
	case 0, syscall.EAGAIN, syscall.EINTR, syscall.ETIMEDOUT:
		return nil
	}
	return fmt.Errorf("futex wait: %w", errno)
}

// WakeAll wakes every process sleeping on addr. The only possible failure
// is a bad address, which cannot happen for a live mapping; a lost wake-up
// would only cost the sleeper its timeout.
func WakeAll(addr *atomic.Uint32) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		opWake, uintptr(1<<31-1), 0, 0, 0)
}

// Yielder yields the processor between polls of a waiting loop to other
// threads and processes (the peer being waited for, on a busy machine).
// The zero value is ready to use.
//
// It never calls runtime.Gosched. On a thread that entered Go from C (every
// C API call; small ops run inline there) Gosched hands the processor to
// another thread and back, and with a spare processor it also wakes an idle
// thread (wakep): three futex wake-ups and context switches per call, which
// preempt the host's compute threads (about 2,500 a second per rank in a
// DDP loop). Goroutines sharing the waiter's processor lose nothing that
// matters: every polling loop that uses a Yielder ends in a futex sleep
// after its yield budget (a system call, whose processor the runtime hands
// to them), and the runtime preempts a goroutine that runs for 10 ms.
type Yielder struct{}

// Yield lets other threads run before the caller polls again.
func (y *Yielder) Yield() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) // cannot fail
}
