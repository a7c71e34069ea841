// Package cma copies memory between processes with Linux cross-memory
// attach: process_vm_readv and process_vm_writev, one kernel copy between a
// buffer of this process and one of another, with no shared memory in
// between. The shm transport and the arena collectives (collectives/intra)
// use it for large payloads; it is not internal because the latter lie
// outside transport/.
//
// The kernel allows it only where this process may ptrace the other
// (same user and no Yama ptrace_scope restriction, or CAP_SYS_PTRACE), and
// a seccomp filter may forbid the system calls altogether: callers must
// expect EPERM or ENOSYS and fall back to copying through shared memory. A
// target that has exited gives ESRCH. PIDs are those of this process's PID
// namespace: a PID read from a process in another namespace names some
// other process here.
package cma
