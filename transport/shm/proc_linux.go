package shm

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// sysPidfdOpen is pidfd_open(2); new system calls share one number on all
// architectures.
const sysPidfdOpen = 434

// errProcessGone means the process of a peer no longer exists.
var errProcessGone = errors.New("peer process exited")

// procWatch tells whether a peer's process still runs. It prefers a pidfd,
// which also sees a zombie as dead and cannot be fooled by PID reuse; on
// kernels without pidfd_open it falls back to kill(pid, 0).
type procWatch struct {
	pid   int
	pidfd int // -1 when unavailable
}

// watchProcess starts watching pid. It fails with errProcessGone when there
// is no such process.
func watchProcess(pid int) (procWatch, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	switch errno {
	case 0:
		syscall.CloseOnExec(int(fd))
		return procWatch{pid: pid, pidfd: int(fd)}, nil
	case syscall.ESRCH:
		return procWatch{pidfd: -1}, errProcessGone
	}
	w := procWatch{pid: pid, pidfd: -1}
	if !w.alive() {
		return w, errProcessGone
	}
	return w, nil
}

// pollFd is struct pollfd.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

const pollIn = 0x1

// alive reports whether the process still runs (a zombie does not).
func (w procWatch) alive() bool {
	if w.pidfd >= 0 {
		// A pidfd becomes readable when its process exits.
		fds := [1]pollFd{{fd: int32(w.pidfd), events: pollIn}}
		var zero syscall.Timespec
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1,
			uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		if errno == 0 {
			return n == 0 || fds[0].revents&pollIn == 0
		}
		// Fall through to kill on an unexpected poll error.
	}
	err := syscall.Kill(w.pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (w procWatch) close() {
	if w.pidfd >= 0 {
		_ = syscall.Close(w.pidfd)
	}
}

// pidNamespace identifies this process's PID namespace (the inode of
// /proc/self/ns/pid), 0 when unknown. PIDs written by a process in another
// namespace mean nothing here.
func pidNamespace() (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, fmt.Errorf("pid namespace: %w", err)
	}
	return st.Ino, nil
}
