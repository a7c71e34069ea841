//go:build linux

package cma

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// The own process is a valid target: the kernel's ptrace check passes for
// the caller's own thread group.
func TestReadWriteOwnProcess(t *testing.T) {
	if !Supported() {
		t.Skip("no process_vm_readv on this architecture")
	}
	for _, n := range []int{0, 1, 4095, 4097, FastChunk + 1, 3<<20 + 5} {
		src := pattern(n)
		dst := make([]byte, n)
		require.NoError(t, Read(os.Getpid(), dst, addr(src)), "read %d", n)
		assert.Equal(t, src, dst, "read %d", n)

		fast := make([]byte, n)
		require.NoError(t, ReadFast(os.Getpid(), fast, addr(src)), "fast read %d", n)
		assert.Equal(t, src, fast, "fast read %d", n)

		out := make([]byte, n)
		require.NoError(t, Write(os.Getpid(), addr(out), src), "write %d", n)
		assert.Equal(t, src, out, "write %d", n)
	}
}

func TestErrors(t *testing.T) {
	if !Supported() {
		t.Skip("no process_vm_readv on this architecture")
	}
	buf := make([]byte, 64)
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := cmd.Process.Pid
	cases := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"read exited process", Read(dead, buf, addr(buf)), syscall.ESRCH},
		{"fast read exited process", ReadFast(dead, buf, addr(buf)), syscall.ESRCH},
		{"write exited process", Write(dead, addr(buf), buf), syscall.ESRCH},
		{"read unmapped", Read(os.Getpid(), buf, 8), syscall.EFAULT},
		{"write unmapped", Write(os.Getpid(), 8, buf), syscall.EFAULT},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.err, c.want)
			assert.Contains(t, c.err.Error(), "pid")
		})
	}
}
