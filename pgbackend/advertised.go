package pgbackend

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/hccl-go/hccl-go/transport/shm"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// The addresses ranks publish: a check every rank makes the same way before
// connecting, and the advice attached to connection failures.

// ifnameAdvice is what every address error tells the user to do.
const ifnameAdvice = "set HCCL_GO_SOCKET_IFNAME (or HCCL_GO_LISTEN_ADDR) on every rank to the interface the hosts reach each other on"

// localOnly reports whether addr ("host:port") can be dialed only from its
// own host: loopback, "localhost" or a wildcard.
func localOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// checkAdvertised fails when a rank publishes an address only its own host
// can reach while a rank on another host publishes one that is reachable
// across hosts: the ranks span machines and the first cannot be reached.
// Every rank sees the same addresses and host ids, so every rank fails at
// once with the same message. Ranks on different hosts that all publish
// loopback are hosts emulated on one machine (HCCL_GO_HOST_ID), which works
// and is allowed.
func checkAdvertised(rv Rendezvous) error {
	if rv.HostIDs == nil {
		return nil
	}
	for i, a := range rv.Addrs {
		if !localOnly(a) {
			continue
		}
		for j, b := range rv.Addrs {
			if rv.HostIDs[j] != rv.HostIDs[i] && b != "" && !localOnly(b) {
				return fmt.Errorf("rank %d publishes %s, which only its own host can reach, while rank %d is on another host (%q, not %q) and publishes %s: %s",
					i, a, j, rv.HostIDs[j], rv.HostIDs[i], b, ifnameAdvice)
			}
		}
	}
	return nil
}

// connectAdvice explains a failed connection set-up: what this rank
// published and what to set, when an address was unreachable or ranks on
// other hosts publish loopback.
func connectAdvice(rv Rendezvous, err error) string {
	if errors.Is(err, tcp.ErrBadSecret) || errors.Is(err, shm.ErrBadSecret) {
		return " [every rank of a communicator must hold the same job secret: set " + JobSecretEnv + " to the same value on every rank, or on none; through the C API, pass the same secret on every rank]"
	}
	if errors.Is(err, tcp.ErrUnreachable) {
		return fmt.Sprintf(" [this rank published %s; the address each rank publishes must be reachable from every other rank's host: %s]", rv.Addrs[rv.Rank], ifnameAdvice)
	}
	if rv.HostIDs == nil {
		return ""
	}
	for i, a := range rv.Addrs {
		if rv.HostIDs[i] != rv.HostIDs[rv.Rank] && localOnly(a) {
			return fmt.Sprintf(" [rank %d is on another host but publishes %s, which only its own host can reach: %s]", i, a, ifnameAdvice)
		}
	}
	return ""
}
