//go:build linux

package arena

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU the calling thread runs on.
func threadCPU() (int, bool) {
	var cpu uint32
	_, _, errno := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0)
	return int(cpu), errno == 0
}

// moveOff migrates the calling thread to the first allowed CPU that
// avoid does not reject, then restores the thread's affinity, when the
// allowed CPUs are at least ranks. It reports whether it moved.
func moveOff(avoid func(cpu int) bool, ranks int) bool {
	runtime.LockOSThread() // both affinity calls must name the same thread
	defer runtime.UnlockOSThread()
	var allowed unix.CPUSet
	if unix.SchedGetaffinity(0, &allowed) != nil || allowed.Count() < ranks {
		return false
	}
	for c := range len(allowed) * 64 {
		if !allowed.IsSet(c) || avoid(c) {
			continue
		}
		var target unix.CPUSet
		target.Set(c)
		if unix.SchedSetaffinity(0, &target) != nil {
			return false
		}
		// Restoring the mask leaves the thread where it now runs.
		_ = unix.SchedSetaffinity(0, &allowed)
		return true
	}
	return false
}
