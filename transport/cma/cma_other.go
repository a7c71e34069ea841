//go:build !linux

package cma

// Supported reports whether this build knows the system calls: not here.
func Supported() bool { return false }

// Read fails with ErrUnsupported.
func Read(pid int, dst []byte, addr uintptr) error { return ErrUnsupported }

// Write fails with ErrUnsupported.
func Write(pid int, addr uintptr, src []byte) error { return ErrUnsupported }

// ReadFast fails with ErrUnsupported.
func ReadFast(pid int, dst []byte, addr uintptr) error { return ErrUnsupported }

// FastChunk is the most ReadFast copies per system call.
const FastChunk = 512 << 10
