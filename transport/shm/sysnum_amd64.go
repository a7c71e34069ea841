//go:build linux

package shm

// sysProcessVMReadv is process_vm_readv(2) (absent from package syscall).
const sysProcessVMReadv = 310
