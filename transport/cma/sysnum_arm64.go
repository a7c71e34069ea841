//go:build linux

package cma

// process_vm_readv(2) and process_vm_writev(2), absent from package syscall.
const (
	sysReadv  = 270
	sysWritev = 271
)
