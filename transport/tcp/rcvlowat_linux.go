package tcp

import (
	"net"
	"syscall"
)

// rcvLowatSetter returns a function that sets c's SO_RCVLOWAT, or nil if
// the connection gives no access to its socket.
func rcvLowatSetter(c *net.TCPConn) func(v int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	return func(v int) error {
		var serr error
		if err := raw.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, v)
		}); err != nil {
			return err
		}
		return serr
	}
}
