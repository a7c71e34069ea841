//go:build linux

package arena

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// System calls the arena needs, Linux only: cross-process futexes on words
// of a MAP_SHARED mapping (hence no FUTEX_PRIVATE_FLAG), open-file-
// description locks for liveness, and segment files.

const (
	futexWait = 0
	futexWake = 1

	fOFDGetlk = 36 // F_OFD_GETLK
	fOFDSetlk = 37 // F_OFD_SETLK
)

// sleepOn sleeps while *addr == val, for at most d. Returning early (value
// changed, woken, interrupted, timed out) is not an error: callers re-check.
func sleepOn(addr *atomic.Uint32, val uint32, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	ts := syscall.NsecToTimespec(int64(d))
	_, _, errno := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		futexWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
	switch errno {
	case 0, syscall.EAGAIN, syscall.EINTR, syscall.ETIMEDOUT:
		return nil
	}
	return fmt.Errorf("futex wait: %w", errno)
}

// wakeAll wakes every process sleeping on addr. It cannot fail on a live
// mapping; a lost wake-up would only cost the sleeper its timeout.
func wakeAll(addr *atomic.Uint32) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		futexWake, uintptr(1<<31-1), 0, 0, 0)
}

// yieldCPU lets other goroutines, then other threads and processes (the
// peer being waited for, on a busy machine) run.
func yieldCPU() {
	runtime.Gosched()
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) // cannot fail
}

// lockFile takes a write lock on the first byte of fd, owned by this open
// file description: it lasts until the description is closed, which the
// kernel does when the process dies.
func lockFile(fd int) error {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	if err := syscall.FcntlFlock(uintptr(fd), fOFDSetlk, &lk); err != nil {
		return fmt.Errorf("lock segment: %w", err)
	}
	return nil
}

// lockHeld reports whether another open file description holds the lock
// of lockFile on the file behind fd.
func lockHeld(fd int) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	if err := syscall.FcntlFlock(uintptr(fd), fOFDGetlk, &lk); err != nil {
		return false, fmt.Errorf("test segment lock: %w", err)
	}
	return lk.Type != syscall.F_UNLCK, nil
}

// createFile creates path exclusively (0600) with size bytes reserved, so a
// full tmpfs fails here and not later with SIGBUS on first touch.
func createFile(path string, size int) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, fmt.Errorf("create segment %s: %w", path, err)
	}
	if err := syscall.Fallocate(fd, 0, 0, int64(size)); err != nil {
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			_ = syscall.Close(fd)
			return -1, fmt.Errorf("allocate %d bytes for segment %s: %w", size, path, err)
		}
		if err := syscall.Ftruncate(fd, int64(size)); err != nil {
			_ = syscall.Close(fd)
			return -1, fmt.Errorf("size segment %s: %w", path, err)
		}
	}
	return fd, nil
}

// openFile opens an existing segment file; errNotReady when it is absent.
func openFile(path string) (fd int, size int64, err error) {
	fd, err = syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return -1, 0, errNotReady
	}
	if err != nil {
		return -1, 0, fmt.Errorf("open segment %s: %w", path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		_ = syscall.Close(fd)
		return -1, 0, fmt.Errorf("stat segment %s: %w", path, err)
	}
	return fd, st.Size, nil
}

func mapFile(fd, size int) ([]byte, error) {
	mem, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map segment: %w", err)
	}
	return mem, nil
}

func unmapFile(mem []byte) error { return syscall.Munmap(mem) }

func closeFile(fd int) error { return syscall.Close(fd) }

func removeFile(path string) error {
	err := syscall.Unlink(path)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}
