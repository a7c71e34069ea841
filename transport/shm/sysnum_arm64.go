//go:build linux

package shm

// sysProcessVMReadv is process_vm_readv(2).
const sysProcessVMReadv = 270
