package topo

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileIdentity is "device:inode" of a file: what tells two mounts of
// /dev/shm apart.
func fileIdentity(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	}
	return "-"
}
