package pgbackend

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/hccl-go/hccl-go/transport/tcp"
)

// Where a rank listens for its peers. The address it publishes must be one
// every other rank can reach, so it is chosen, in this order, from:
//
//  1. HCCL_GO_LISTEN_ADDR ("host:port"); a wildcard host accepts on every
//     interface and publishes the address the rules below choose;
//  2. HCCL_GO_SOCKET_IFNAME (ifname.go): an address of the interface it
//     selects, the one the route to the rendezvous store leaves from when
//     that interface is among them;
//  3. loopback, when every rank is on this host (host ids equal);
//  4. the local address of the route to the rendezvous store's host
//     (MASTER_ADDR): the ranks all reach the store, so an address on the
//     same network is the best guess for reaching each other. Loopback
//     does not count here: the store's name may resolve to loopback on its
//     own host (Debian maps the hostname to 127.0.1.1);
//  5. the first address of an interface that is up and not loopback,
//     docker or virbr (bridges that carry the same address on every host);
//  6. loopback: the machine has no other address, so ranks on "other hosts"
//     can only be emulated on this one.
//
// IPv4 is preferred over IPv6 unless the route to the store is IPv6; IPv6
// link-local addresses are never chosen (they need a zone that differs
// per host).

// ListenHints is what a rank knows when it opens its listener: every
// rank's host, from the rendezvous, and where the rendezvous store is.
type ListenHints struct {
	Rank int // for log lines
	// HostIDs is every rank's host identity (topo.LocalIdentity); nil when
	// unknown.
	HostIDs []string
	// StoreHost is the host (name or address) this rank reaches the
	// rendezvous store at; "" when unknown (a file store).
	StoreHost string
}

// singleHost reports whether every rank is known to be on this host.
func (h ListenHints) singleHost() bool {
	if len(h.HostIDs) == 0 {
		return false
	}
	for _, id := range h.HostIDs {
		if id != h.HostIDs[0] {
			return false
		}
	}
	return true
}

// Listen opens the listener of a rank whose peers are all on this host:
// HCCL_GO_LISTEN_ADDR or HCCL_GO_SOCKET_IFNAME when set, else loopback.
// Ranks that may span hosts use ListenRank.
func Listen(cfg Config) (*tcp.Listener, error) {
	return ListenRank(cfg, ListenHints{HostIDs: []string{"this host"}})
}

// ListenRank opens this rank's listening socket on the address chosen as
// above. Its Addr is what the rank publishes in the rendezvous.
func ListenRank(cfg Config, h ListenHints) (*tcp.Listener, error) {
	plan, err := planListen(cfg, h, hostNet{})
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	l, err := tcp.ListenAs(plan.bind, plan.advertise)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (%s): %w", plan.bind, plan.why, err)
	}
	newInfoLog(cfg, h.Rank).printf("listening on %s, published as %s: %s", plan.bind, l.Addr(), plan.why)
	return l, nil
}

func setListenAddr(c *Config, v string) error {
	if v == "" {
		c.ListenAddr = ""
		return nil
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("want host:port ([v6]:port for IPv6; port 0 for any): %w", err)
	}
	c.ListenAddr = v
	return nil
}

// listenPlan is where to bind, what to publish, and why.
type listenPlan struct {
	bind      string // "host:port"
	advertise string // host peers dial; "" for the bound address
	why       string
}

func planListen(cfg Config, h ListenHints, sys netSystem) (listenPlan, error) {
	port, wildcard, family := "0", "", anyFamily
	if cfg.ListenAddr != "" {
		host, p, err := net.SplitHostPort(cfg.ListenAddr)
		if err != nil {
			return listenPlan{}, fmt.Errorf("HCCL_GO_LISTEN_ADDR=%s: %w", cfg.ListenAddr, err)
		}
		ip, perr := netip.ParseAddr(host)
		if host != "" && (perr != nil || !ip.IsUnspecified()) {
			return listenPlan{bind: cfg.ListenAddr, why: "HCCL_GO_LISTEN_ADDR"}, nil
		}
		port, wildcard = p, cfg.ListenAddr
		if perr == nil && ip.Is4() {
			family = ipv4Only // 0.0.0.0 takes no IPv6 connections
		}
	}
	ip, why, err := chooseHost(cfg, h, sys, family)
	if err != nil {
		return listenPlan{}, err
	}
	if wildcard != "" {
		return listenPlan{bind: wildcard, advertise: ip.String(), why: why + "; accepting on every interface (HCCL_GO_LISTEN_ADDR)"}, nil
	}
	return listenPlan{bind: net.JoinHostPort(ip.String(), port), why: why}, nil
}

type addrFamily int

const (
	anyFamily addrFamily = iota
	ipv4Only
)

// chooseHost applies rules 2-6 above.
func chooseHost(cfg Config, h ListenHints, sys netSystem, family addrFamily) (netip.Addr, string, error) {
	var route netip.Addr
	routeNote := ""
	if h.StoreHost != "" {
		var err error
		if route, err = sys.RouteSource(h.StoreHost); err != nil {
			routeNote = fmt.Sprintf(" (no route to the rendezvous store's host %s: %v)", h.StoreHost, err)
		}
		if route.IsValid() && family == ipv4Only && !route.Is4() {
			route = netip.Addr{}
		}
	}
	prefer6 := route.IsValid() && route.Is6()
	if cfg.SocketIfname != "" {
		return interfaceHost(cfg.SocketIfname, route, prefer6, sys, family)
	}
	if h.singleHost() {
		if prefer6 && route.IsLoopback() {
			return netip.IPv6Loopback(), "every rank is on this host: loopback", nil
		}
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), "every rank is on this host: loopback", nil
	}
	if usable(route) && !route.IsLoopback() {
		return route, fmt.Sprintf("the address of the route to the rendezvous store's host %s", h.StoreHost), nil
	}
	if route.IsLoopback() {
		routeNote = fmt.Sprintf(" (the rendezvous store's host %s is loopback from here, which other hosts cannot reach)", h.StoreHost)
	}
	ifs, err := sys.Interfaces()
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("listing network interfaces: %w", err)
	}
	var candidates []netIface
	for _, ifc := range ifs {
		if ifc.Up && !ifc.Loopback && !strings.HasPrefix(ifc.Name, "docker") && !strings.HasPrefix(ifc.Name, "virbr") {
			candidates = append(candidates, ifc)
		}
	}
	if a, name, ok := pickAddr(candidates, prefer6, family, false); ok {
		return a, fmt.Sprintf("the first address of a network interface (%s)%s", name, routeNote), nil
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1}), "no network interface has an address other than loopback" + routeNote, nil
}

// interfaceHost picks the address of an interface HCCL_GO_SOCKET_IFNAME
// selects: the route's source when it is one of theirs, else the first of
// the preferred family.
func interfaceHost(spec string, route netip.Addr, prefer6 bool, sys netSystem, family addrFamily) (netip.Addr, string, error) {
	f, err := parseIfFilter(spec)
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("HCCL_GO_SOCKET_IFNAME: %w", err)
	}
	ifs, err := sys.Interfaces()
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("HCCL_GO_SOCKET_IFNAME=%s: listing network interfaces: %w", spec, err)
	}
	var selected []netIface
	var names []string
	for _, ifc := range ifs {
		names = append(names, ifc.Name)
		if ifc.Up && f.selects(ifc) {
			selected = append(selected, ifc)
		}
	}
	why := "HCCL_GO_SOCKET_IFNAME=" + spec
	if route.IsValid() {
		for _, ifc := range selected {
			for _, a := range ifc.Addrs {
				if a == route && usableOn(a, ifc) {
					return a, fmt.Sprintf("%s (%s, the route to the rendezvous store)", why, ifc.Name), nil
				}
			}
		}
	}
	if a, name, ok := pickAddr(selected, prefer6, family, true); ok {
		return a, fmt.Sprintf("%s (%s)", why, name), nil
	}
	return netip.Addr{}, "", fmt.Errorf("HCCL_GO_SOCKET_IFNAME=%s selects no interface that is up and has a usable address (interfaces here: %s)", spec, strings.Join(names, ", "))
}

// pickAddr returns the first usable address of the preferred family among
// ifs (in their order), else the first of the other family.
func pickAddr(ifs []netIface, prefer6 bool, family addrFamily, loopbackOK bool) (netip.Addr, string, bool) {
	for _, want6 := range []bool{prefer6, !prefer6} {
		if want6 && family == ipv4Only {
			continue
		}
		for _, ifc := range ifs {
			for _, a := range ifc.Addrs {
				if a.Is6() == want6 && usableOn(a, ifc) && (loopbackOK || !a.IsLoopback()) {
					return a, ifc.Name, true
				}
			}
		}
	}
	return netip.Addr{}, "", false
}

// usable reports whether peers on other hosts could dial a (loopback aside).
func usable(a netip.Addr) bool {
	return a.IsValid() && !a.IsUnspecified() && !a.IsMulticast() && !(a.Is6() && a.IsLinkLocalUnicast())
}

// usableOn is usable for an address of ifc: loopback only on a loopback
// interface.
func usableOn(a netip.Addr, ifc netIface) bool {
	return usable(a) && (!a.IsLoopback() || ifc.Loopback)
}

// netSystem is what address selection asks of the machine; tests replace it.
type netSystem interface {
	Interfaces() ([]netIface, error)
	// RouteSource is the local address of the route to host.
	RouteSource(host string) (netip.Addr, error)
}

type netIface struct {
	Name         string
	Up, Loopback bool
	Addrs        []netip.Addr
}

// hostNet is the machine's own netSystem.
type hostNet struct{}

// routeLookupTimeout bounds resolving the store's host name.
const routeLookupTimeout = 5 * time.Second

func (hostNet) Interfaces() ([]netIface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]netIface, 0, len(ifs))
	for _, ifc := range ifs {
		n := netIface{Name: ifc.Name, Up: ifc.Flags&net.FlagUp != 0, Loopback: ifc.Flags&net.FlagLoopback != 0}
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", ifc.Name, err)
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
					n.Addrs = append(n.Addrs, ip.Unmap())
				}
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// RouteSource connects a UDP socket to host: the kernel picks the route and
// its source address, and no packet is sent.
func (hostNet) RouteSource(host string) (netip.Addr, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	c, err := net.DialTimeout("udp", net.JoinHostPort(host, "9"), routeLookupTimeout)
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	ua, ok := c.LocalAddr().(*net.UDPAddr)
	if !ok {
		return netip.Addr{}, errors.New("no local address")
	}
	return ua.AddrPort().Addr().Unmap(), nil
}
