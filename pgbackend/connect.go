package pgbackend

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/hccl-go/hccl-go/transport/tcp"
)

// Listen opens this rank's listening socket, on the interface the config
// names (HCCL_GO_SOCKET_IFNAME) or on loopback. Its Addr is what the rank
// publishes in the rendezvous.
func Listen(cfg Config) (*tcp.Listener, error) {
	host := "127.0.0.1"
	if cfg.SocketIfname != "" {
		ip, err := interfaceIPv4(cfg.SocketIfname)
		if err != nil {
			return nil, fmt.Errorf("listen: HCCL_GO_SOCKET_IFNAME=%s: %w", cfg.SocketIfname, err)
		}
		host = ip
	}
	l, err := tcp.Listen(net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", host, err)
	}
	return l, nil
}

func interfaceIPv4(name string) (string, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return "", err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("interface %s has no IPv4 address", name)
}

// Rendezvous is what every rank learned about the others through the
// launcher's store.
type Rendezvous struct {
	Rank    int
	Addrs   []string // per rank: its listener's address
	HostIDs []string // per rank: host identity; nil when unknown
	Secret  []byte   // the job's secret for connection handshakes
}

// Connect builds this rank's communicator: it links to every other rank
// (consuming the listener) and returns once all links are up.
func Connect(ctx context.Context, l *tcp.Listener, rv Rendezvous, cfg Config) (*Communicator, error) {
	size := len(rv.Addrs)
	if rv.Rank < 0 || rv.Rank >= size {
		l.Close()
		return nil, fmt.Errorf("init: %w: rank %d out of range [0, %d)", ErrInvalidArgument, rv.Rank, size)
	}
	if rv.HostIDs != nil && len(rv.HostIDs) != size {
		l.Close()
		return nil, fmt.Errorf("init: %w: %d host ids for %d ranks", ErrInvalidArgument, len(rv.HostIDs), size)
	}
	if err := checkReachable(rv); err != nil {
		l.Close()
		return nil, fmt.Errorf("init rank %d: %w", rv.Rank, err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	ep, err := tcp.Connect(ctx, l, rv.Rank, rv.Addrs, tcp.Config{
		Secret:         rv.Secret,
		StreamsPerPeer: cfg.StreamsPerPeer,
		ConnectTimeout: cfg.ConnectTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("init rank %d of %d: %w", rv.Rank, size, err)
	}
	kinds := make([]string, size)
	for i := range kinds {
		kinds[i] = "tcp"
	}
	kinds[rv.Rank] = "self"
	return New(ep, cfg, kinds), nil
}

// checkReachable refuses a job whose ranks sit on different hosts but
// advertise loopback addresses: they could never connect.
func checkReachable(rv Rendezvous) error {
	if rv.HostIDs == nil {
		return nil
	}
	for i, a := range rv.Addrs {
		if rv.HostIDs[i] != rv.HostIDs[rv.Rank] && strings.HasPrefix(a, "127.") {
			return fmt.Errorf("rank %d is on another host but advertises loopback address %s: set HCCL_GO_SOCKET_IFNAME on every rank", i, a)
		}
	}
	return nil
}
