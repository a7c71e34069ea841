//go:build !linux

package tcp

import "net"

// rcvLowatSetter returns nil: the low-water mark is used on Linux only,
// where it is known to hold back wake-ups of epoll readers (elsewhere it
// may not, or may make a non-blocking read wait).
func rcvLowatSetter(*net.TCPConn) func(v int) error { return nil }
