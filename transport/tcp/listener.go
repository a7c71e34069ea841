package tcp

import (
	"fmt"
	"net"
	"sync"
)

// defaultBindAddr is used when Listen is given "": loopback, any port.
const defaultBindAddr = "127.0.0.1:0"

// Listener is the socket a rank listens on for its peers' connections. Its
// address is published through the rendezvous before Connect is called.
type Listener struct {
	ln        *net.TCPListener
	closeOnce sync.Once
	closeErr  error
}

// Listen opens a listening socket on bindAddr ("host:port"; port 0 picks a
// free port; "" means 127.0.0.1:0).
func Listen(bindAddr string) (*Listener, error) {
	if bindAddr == "" {
		bindAddr = defaultBindAddr
	}
	addr, err := net.ResolveTCPAddr("tcp", bindAddr)
	if err != nil {
		return nil, fmt.Errorf("tcp listen on %q: %w", bindAddr, err)
	}
	ln, err := net.ListenTCP("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcp listen on %q: %w", bindAddr, err)
	}
	return &Listener{ln: ln}, nil
}

// Addr is the address peers dial, "host:port".
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close stops listening. It is idempotent; Connect calls it when done.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		if err := l.ln.Close(); err != nil {
			l.closeErr = fmt.Errorf("tcp listener %s: close: %w", l.Addr(), err)
		}
	})
	return l.closeErr
}
