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
	if err := transfer(sysReadv, pid, dst, addr); err != nil {
		return fmt.Errorf("process_vm_readv from pid %d: %w", pid, err)
	}
	return nil
}

// Write copies src to addr in process pid.
func Write(pid int, addr uintptr, src []byte) error {
	if err := transfer(sysWritev, pid, src, addr); err != nil {
		return fmt.Errorf("process_vm_writev to pid %d: %w", pid, err)
	}
	return nil
}

// transfer runs one of the two system calls until all of local is done:
// the kernel stops short when it meets a bad page (the next call then
// reports the error) and may split very large requests.
func transfer(sys uintptr, pid int, local []byte, addr uintptr) error {
	if sys <= 0 {
		return ErrUnsupported
	}
	for off := 0; off < len(local); {
		n := uint64(len(local) - off)
		l := iovec{base: uintptr(unsafe.Pointer(&local[off])), len: n}
		r := iovec{base: addr + uintptr(off), len: n}
		done, _, errno := syscall.Syscall6(sys, uintptr(pid),
			uintptr(unsafe.Pointer(&l)), 1, uintptr(unsafe.Pointer(&r)), 1, 0)
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
