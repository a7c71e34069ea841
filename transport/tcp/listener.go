package tcp

import (
	"fmt"
	"net"
	"strconv"
	"sync"
)

// defaultBindAddr is used when Listen is given "": loopback, any port.
const defaultBindAddr = "127.0.0.1:0"

// Listener is the socket a rank listens on for its peers' connections. Its
// address is published through the rendezvous before Connect is called.
type Listener struct {
	ln        *net.TCPListener
	addr      string // what peers dial
	closeOnce sync.Once
	closeErr  error
}

// Listen opens a listening socket on bindAddr ("host:port"; port 0 picks a
// free port; "" means 127.0.0.1:0). Peers dial the address it is bound to.
func Listen(bindAddr string) (*Listener, error) {
	return ListenAs(bindAddr, "")
}

// ListenAs is Listen for a socket bound to one address but reached at
// another host: a wildcard bind ("0.0.0.0:0", "[::]:0") accepts on every
// interface, and peers dial advertiseHost at the bound port. An empty
// advertiseHost means the bound address.
func ListenAs(bindAddr, advertiseHost string) (*Listener, error) {
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
	l := &Listener{ln: ln, addr: ln.Addr().String()}
	if advertiseHost != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		l.addr = net.JoinHostPort(advertiseHost, strconv.Itoa(port))
	}
	return l, nil
}

// Addr is the address peers dial, "host:port" ("[v6]:port" for IPv6).
func (l *Listener) Addr() string { return l.addr }

// Close stops listening. It is idempotent; Connect calls it when done.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		if err := l.ln.Close(); err != nil {
			l.closeErr = fmt.Errorf("tcp listener %s: close: %w", l.Addr(), err)
		}
	})
	return l.closeErr
}
