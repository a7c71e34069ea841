//go:build !linux

package topo

import "io/fs"

// fileIdentity is unknown off Linux (no shared-memory transport there).
func fileIdentity(fs.FileInfo) string { return "-" }
