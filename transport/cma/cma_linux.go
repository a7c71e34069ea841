//go:build linux

package cma

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// Supported reports whether this build knows the system calls (on other
// architectures every call fails with ErrUnsupported).
func Supported() bool { return sysReadv > 0 }

// iovec is struct iovec with the base as a plain address: the remote one is
// not a pointer of this process.
type iovec struct {
	base uintptr
	len  uint64
}

// Read copies len(dst) bytes at addr in process pid into dst. dst (src for
// Write) must be heap, C or mapped memory, never a goroutine's stack, which
// may move while the kernel copies.
func Read(pid int, dst []byte, addr uintptr) error {
	if err := transfer(sysReadv, pid, dst, addr, false); err != nil {
		return fmt.Errorf("process_vm_readv from pid %d: %w", pid, err)
	}
	return nil
}

// ReadFast is Read for the chunks of a pipeline: it copies at most
// FastChunk bytes per system call and keeps the goroutine's processor
// during each (a raw system call), where Read lets the scheduler hand the
// processor to others and take it back after about 20µs. That hand-off
// costs more than the copy when the host is busy (measured: 256 KiB reads
// in a two-process all_reduce waited 175µs per 8 MiB op for it). The cost:
// a garbage collection or another goroutine waits for one chunk's copy.
func ReadFast(pid int, dst []byte, addr uintptr) error {
	for off := 0; off < len(dst); off += FastChunk {
		end := min(off+FastChunk, len(dst))
		if err := transfer(sysReadv, pid, dst[off:end], addr+uintptr(off), true); err != nil {
			return fmt.Errorf("process_vm_readv from pid %d: %w", pid, err)
		}
	}
	return nil
}

// FastChunk is the most ReadFast copies per system call (tens of µs).
const FastChunk = 512 << 10

// Write copies src to addr in process pid.
func Write(pid int, addr uintptr, src []byte) error {
	if err := transfer(sysWritev, pid, src, addr, false); err != nil {
		return fmt.Errorf("process_vm_writev to pid %d: %w", pid, err)
	}
	return nil
}

// transfer runs one of the two system calls until all of local is done:
// the kernel stops short when it meets a bad page (the next call then
// reports the error) and may split very large requests. raw keeps the
// processor (syscall.RawSyscall6).
func transfer(sys uintptr, pid int, local []byte, addr uintptr, raw bool) error {
	if sys <= 0 {
		return ErrUnsupported
	}
	for off := 0; off < len(local); {
		n := uint64(len(local) - off)
		l := iovec{base: uintptr(unsafe.Pointer(&local[off])), len: n}
		r := iovec{base: addr + uintptr(off), len: n}
		// Direct calls: the compiler keeps l and r in place for the call
		// only when it sees the conversions in a system call's arguments.
		var done uintptr
		var errno syscall.Errno
		if raw {
			done, _, errno = syscall.RawSyscall6(sys, uintptr(pid),
				uintptr(unsafe.Pointer(&l)), 1, uintptr(unsafe.Pointer(&r)), 1, 0)
		} else {
			done, _, errno = syscall.Syscall6(sys, uintptr(pid),
				uintptr(unsafe.Pointer(&l)), 1, uintptr(unsafe.Pointer(&r)), 1, 0)
		}
		runtime.KeepAlive(local)
		if errno != 0 {
			return errno
		}
		if done == 0 {
			return errNoProgress
		}
		off += int(done)
	}
	return nil
}

var errNoProgress = errors.New("no bytes transferred")
