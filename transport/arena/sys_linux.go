//go:build linux

package arena

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hccl-go/hccl-go/transport/internal/futex"
)

// System calls the arena needs, Linux only: open-file-description locks for
// liveness, and segment files. Futex waits are in transport/internal/futex.

// The waits of the arena (sys_other.go has the stubs of other systems).
func sleepOn(addr *atomic.Uint32, val uint32, d time.Duration) error { return futex.Wait(addr, val, d) }
func wakeAll(addr *atomic.Uint32)                                    { futex.WakeAll(addr) }

// yielder yields the processor between polls (see futex.Yielder).
type yielder = futex.Yielder

const (
	fOFDGetlk = 36 // F_OFD_GETLK
	fOFDSetlk = 37 // F_OFD_SETLK
)

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
