// Package futex waits on and wakes words of shared memory across processes,
// for the shared-memory transports (shm, arena). FUTEX_PRIVATE_FLAG is
// deliberately absent: waiter and waker are in different processes.
package futex

import (
	"fmt"
	"runtime"
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

// Yielder yields the processor between polls of a waiting loop: to other
// threads and processes (the peer being waited for, on a busy machine) on
// every call, and to other goroutines on every goschedEvery-th. The zero
// value is ready to use; keep one per loop.
type Yielder struct{ n uint32 }

// goschedEvery spaces out runtime.Gosched: on a thread that entered Go from
// C (every C API call), Gosched hands the processor to another thread and
// back, two futex wake-ups costing ~10 µs, where sched_yield costs well
// under one. Goroutines that share the waiter's P still run soon enough.
const goschedEvery = 512

// Yield lets other threads (and, now and then, goroutines) run before the
// caller polls again.
func (y *Yielder) Yield() {
	y.n++
	if y.n%goschedEvery == 0 {
		runtime.Gosched()
	}
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) // cannot fail
}
