package shm

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Futex operations on words of a MAP_SHARED mapping. FUTEX_PRIVATE_FLAG is
// deliberately absent: waiter and waker are in different processes.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// futexWait sleeps while *addr == val, for at most d. Returning early (value
// already changed, interrupted, woken, timed out) is not an error: callers
// re-check their condition in a loop.
func futexWait(addr *atomic.Uint32, val uint32, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	ts := syscall.NsecToTimespec(int64(d))
	_, _, errno := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
	switch errno {
	case 0, syscall.EAGAIN, syscall.EINTR, syscall.ETIMEDOUT:
		return nil
	}
	return fmt.Errorf("futex wait: %w", errno)
}

// futexWakeAll wakes every process sleeping on addr.
func futexWakeAll(addr *atomic.Uint32) {
	// The only possible failure is a bad address, which cannot happen for a
	// live mapping; a wake that is lost would be covered by the waiter's
	// timeout anyway.
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		futexWakeOp, uintptr(1<<31-1), 0, 0, 0)
}

// yield lets other goroutines, then other threads and processes (the peer
// we wait for, on a busy machine), run before we poll again.
func yield() {
	runtime.Gosched()
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) // cannot fail
}

// ringBell bumps the eventcount word and wakes its sleepers, but only when the
// waiters flag says someone may sleep, so a busy link makes no system calls.
func ringBell(waiters, word *atomic.Uint32) {
	if waiters.Load() != 0 {
		word.Add(1)
		futexWakeAll(word)
	}
}
