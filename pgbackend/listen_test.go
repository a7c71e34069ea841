package pgbackend

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeNet is a machine for address selection: its interfaces, and the
// source address of the route to each known host.
type fakeNet struct {
	ifs    []netIface
	routes map[string]string
}

func (f fakeNet) Interfaces() ([]netIface, error) { return f.ifs, nil }

func (f fakeNet) RouteSource(host string) (netip.Addr, error) {
	a, ok := f.routes[host]
	if !ok {
		return netip.Addr{}, errors.New("connect: network is unreachable")
	}
	return netip.MustParseAddr(a), nil
}

func iface(name string, up, loopback bool, addrs ...string) netIface {
	ifc := netIface{Name: name, Up: up, Loopback: loopback}
	for _, a := range addrs {
		ifc.Addrs = append(ifc.Addrs, netip.MustParseAddr(a))
	}
	return ifc
}

// A host with loopback, a docker bridge listed before the real interfaces,
// two networks (eth0 dual-stack), and an interface that is down.
var twoNetworks = fakeNet{
	ifs: []netIface{
		iface("lo", true, true, "127.0.0.1", "::1"),
		iface("docker0", true, false, "172.17.0.1"),
		iface("eth0", true, false, "fe80::5", "10.0.0.5", "2001:db8::5"),
		iface("eth1", true, false, "192.168.1.5"),
		iface("ib0", false, false, "10.1.0.5"),
	},
	routes: map[string]string{
		"master":      "10.0.0.5",
		"192.168.1.1": "192.168.1.5",
		"2001:db8::1": "2001:db8::5",
		"127.0.0.1":   "127.0.0.1",
		"::1":         "::1",
		"node0":       "127.0.0.1", // /etc/hosts maps the store's own name to 127.0.1.1
	},
}

var (
	oneHost  = []string{"h", "h", "h"}
	twoHosts = []string{"a", "a", "b"}
)

func TestPlanListen(t *testing.T) {
	onlyLoopback := fakeNet{ifs: []netIface{iface("lo", true, true, "127.0.0.1")}}
	ipv6Only := fakeNet{ifs: []netIface{iface("lo", true, true, "::1"), iface("eth0", true, false, "fe80::5", "2001:db8::5")}}
	linkLocalOnly := fakeNet{ifs: []netIface{iface("lo", true, true, "127.0.0.1"), iface("eth0", true, false, "fe80::5")}}
	tests := []struct {
		name          string
		sys           fakeNet
		hosts         []string
		store         string
		ifname, addr  string // HCCL_GO_SOCKET_IFNAME, HCCL_GO_LISTEN_ADDR
		bind, publish string // publish "": the bound address
		why           string
		err           string
	}{
		// Nothing set.
		{name: "one host: loopback", hosts: oneHost, store: "master", bind: "127.0.0.1:0", why: "every rank is on this host"},
		{name: "one host, IPv6 store: IPv6 loopback", hosts: oneHost, store: "::1", bind: "[::1]:0"},
		{name: "two hosts: route to the store", hosts: twoHosts, store: "master", bind: "10.0.0.5:0", why: "route to the rendezvous store's host master"},
		{name: "two hosts: the route picks the network", hosts: twoHosts, store: "192.168.1.1", bind: "192.168.1.5:0"},
		{name: "two hosts, IPv6 store", hosts: twoHosts, store: "2001:db8::1", bind: "[2001:db8::5]:0"},
		{name: "unknown hosts: route to the store", hosts: nil, store: "master", bind: "10.0.0.5:0"},
		{name: "store resolves to loopback here: first interface, not docker", hosts: twoHosts, store: "node0", bind: "10.0.0.5:0", why: "first address of a network interface (eth0) (the rendezvous store's host node0 is loopback"},
		{name: "store at 127.0.0.1 but hosts differ: first interface", hosts: twoHosts, store: "127.0.0.1", bind: "10.0.0.5:0"},
		{name: "no store host: first interface", hosts: twoHosts, bind: "10.0.0.5:0", why: "first address"},
		{name: "no route to the store: first interface", hosts: twoHosts, store: "elsewhere", bind: "10.0.0.5:0", why: "no route to the rendezvous store's host elsewhere"},
		{name: "only loopback: loopback", sys: onlyLoopback, hosts: twoHosts, bind: "127.0.0.1:0", why: "no network interface has an address other than loopback"},
		{name: "IPv6 only", sys: ipv6Only, hosts: twoHosts, bind: "[2001:db8::5]:0"},
		{name: "IPv6 link-local is never chosen", sys: linkLocalOnly, hosts: twoHosts, bind: "127.0.0.1:0"},

		// HCCL_GO_SOCKET_IFNAME.
		{name: "ifname, even on one host", hosts: oneHost, ifname: "eth1", bind: "192.168.1.5:0", why: "HCCL_GO_SOCKET_IFNAME=eth1 (eth1)"},
		{name: "ifname prefix: the route's interface among them", hosts: twoHosts, store: "192.168.1.1", ifname: "eth", bind: "192.168.1.5:0", why: "the route to the rendezvous store"},
		{name: "ifname prefix: the first without a route", hosts: twoHosts, ifname: "eth", bind: "10.0.0.5:0"},
		{name: "ifname: family of the route", hosts: twoHosts, store: "2001:db8::1", ifname: "eth0", bind: "[2001:db8::5]:0"},
		{name: "ifname exclusion skips loopback and interfaces that are down", hosts: twoHosts, ifname: "^docker,eth0", bind: "192.168.1.5:0"},
		{name: "ifname exact", hosts: twoHosts, ifname: "=eth1", bind: "192.168.1.5:0"},
		{name: "ifname exact needs the whole name", hosts: twoHosts, ifname: "=eth", err: "HCCL_GO_SOCKET_IFNAME==eth selects no interface that is up and has a usable address (interfaces here: lo, docker0, eth0, eth1, ib0)"},
		{name: "ifname of an interface that is down", hosts: twoHosts, ifname: "ib0", err: "selects no interface that is up"},
		{name: "ifname lo", hosts: twoHosts, ifname: "lo", bind: "127.0.0.1:0"},

		// HCCL_GO_LISTEN_ADDR.
		{name: "listen addr", hosts: twoHosts, store: "master", ifname: "eth1", addr: "10.0.0.5:29400", bind: "10.0.0.5:29400", why: "HCCL_GO_LISTEN_ADDR"},
		{name: "listen addr IPv6", hosts: twoHosts, addr: "[2001:db8::5]:0", bind: "[2001:db8::5]:0"},
		{name: "wildcard publishes the chosen address", hosts: twoHosts, store: "master", addr: "0.0.0.0:0", bind: "0.0.0.0:0", publish: "10.0.0.5", why: "accepting on every interface"},
		{name: "IPv6 wildcard", hosts: twoHosts, store: "2001:db8::1", addr: "[::]:5000", bind: "[::]:5000", publish: "2001:db8::5"},
		{name: "IPv4 wildcard publishes IPv4", hosts: twoHosts, store: "2001:db8::1", addr: "0.0.0.0:0", bind: "0.0.0.0:0", publish: "10.0.0.5"},
		{name: "wildcard with ifname", hosts: twoHosts, ifname: "eth1", addr: ":7000", bind: ":7000", publish: "192.168.1.5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sys := tc.sys
			if sys.ifs == nil {
				sys = twoNetworks
			}
			cfg := DefaultConfig()
			if tc.ifname != "" {
				require.NoError(t, setIfname(&cfg, tc.ifname))
			}
			if tc.addr != "" {
				require.NoError(t, setListenAddr(&cfg, tc.addr))
			}
			plan, err := planListen(cfg, ListenHints{HostIDs: tc.hosts, StoreHost: tc.store}, sys)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.bind, plan.bind)
			assert.Equal(t, tc.publish, plan.advertise)
			assert.Contains(t, plan.why, tc.why)
		})
	}
}

// On this machine: ranks on one host listen on loopback; ranks on several
// hosts never do when the machine has another address, and the address
// they publish takes connections.
func TestListenRankHere(t *testing.T) {
	cfg := DefaultConfig()
	l, err := ListenRank(cfg, ListenHints{HostIDs: oneHost, StoreHost: "127.0.0.1"})
	require.NoError(t, err)
	assert.Regexp(t, `^127\.0\.0\.1:\d+$`, l.Addr())
	require.NoError(t, l.Close())

	ifs, err := hostNet{}.Interfaces()
	require.NoError(t, err)
	if _, _, ok := pickAddr(ifs, false, anyFamily, false); !ok {
		t.Skip("this machine has no address other than loopback")
	}
	l, err = ListenRank(cfg, ListenHints{HostIDs: twoHosts, StoreHost: "127.0.0.1"})
	require.NoError(t, err)
	defer l.Close()
	assert.False(t, localOnly(l.Addr()), "published %s", l.Addr())
	c, err := net.Dial("tcp", l.Addr())
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// The route lookup finds the source address of a route without sending.
func TestRouteSource(t *testing.T) {
	a, err := hostNet{}.RouteSource("127.0.0.1")
	require.NoError(t, err)
	assert.True(t, a.IsLoopback(), "%v", a)
	if _, err := net.Listen("tcp", "[::1]:0"); err == nil {
		a, err = hostNet{}.RouteSource("[::1]")
		require.NoError(t, err)
		assert.Equal(t, netip.IPv6Loopback(), a)
	}
}
