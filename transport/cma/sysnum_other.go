//go:build linux && !amd64 && !arm64

package cma

// The system call numbers are unknown here: every call fails with
// ErrUnsupported.
const (
	sysReadv  = -1
	sysWritev = -1
)
