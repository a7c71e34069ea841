package netns_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Addresses without configuration: two emulated hosts (namespaces with
// their own HCCL_GO_HOST_ID), joined by one veth, ranks that set no
// HCCL_GO_SOCKET_IFNAME. See pgbackend/listen.go for how a rank chooses
// the address it publishes, and transport/tcp/reach.go for how ranks find
// out, within HCCL_GO_UNREACHABLE_MS, that an address is wrong.

// twoHosts builds hosts ha (10.199.1.1) and hb (10.199.1.2) joined by
// va-vb.
func twoHosts(t *testing.T) *bed {
	b := newBed(t)
	b.addHost("ha")
	b.addHost("hb")
	b.link("ha", "va", "hb", "vb", "1gbit", "256kb")
	b.assign("ha", "va", "10.199.1.1/24")
	b.assign("hb", "vb", "10.199.1.2/24")
	return b
}

// oneAllReduce is a variant that connects and checks one all_reduce; no
// link probing (it has nothing to show here).
var oneAllReduce = []variant{{Name: "init", Options: "topo_probe=0", Sizes: []int{1 << 20}, Iters: 1}}

// TestAddressesWithoutIfname: 2 ranks on each of two hosts, no
// HCCL_GO_SOCKET_IFNAME. With the store in the first host (MASTER_ADDR
// 10.199.1.1) every rank publishes the address of its route there; with a
// store that has no host (a file store) the address of its first
// interface. Either way they connect (shared memory inside a host, TCP
// across) and all_reduce correctly, and nobody publishes loopback.
func TestAddressesWithoutIfname(t *testing.T) {
	b := twoHosts(t)
	for _, store := range []string{"10.199.1.1", ""} {
		t.Run("store host "+orNone(store), func(t *testing.T) {
			places := make([]placement, 4)
			for r := range places {
				h := []string{"ha", "ha", "hb", "hb"}[r]
				places[r] = placement{NS: h, Env: []string{"HCCL_GO_HOST_ID=" + h, "HCCL_GO_DEBUG=INFO"}, StoreHost: store}
			}
			res := launch(t, b, t.TempDir(), places, oneAllReduce, time.Minute)["init"]
			t.Logf("published: %v", res[0].Addrs)
			for r, addr := range res[0].Addrs {
				want := map[bool]string{true: "10.199.1.1:", false: "10.199.1.2:"}[r < 2]
				assert.True(t, strings.HasPrefix(addr, want), "rank %d published %s, want %s...", r, addr, want)
			}
			assert.Equal(t, []string{"self", "shm+arena", "tcp", "tcp"}, res[0].Transports)
			assert.Equal(t, []string{"tcp", "tcp", "shm+arena", "self"}, res[3].Transports)
		})
	}
}

// TestUnreachableAddressFailsEveryRank: when a rank publishes an address
// another host cannot reach, every rank fails within seconds (not
// HCCL_GO_CONNECT_TIMEOUT_MS, set to 10 minutes here; the ranks are killed
// after 90 s), and its error names the other rank, the address it tried
// and HCCL_GO_SOCKET_IFNAME.
func TestUnreachableAddressFailsEveryRank(t *testing.T) {
	b := twoHosts(t)
	// d0: an interface of its own in each host with the same address,
	// 10.199.2.1, as docker0 has 172.17.0.1 on every host. e0: one in ha
	// only, 10.199.4.1, to which hb has no route.
	b.addAddress("ha", "d0", "10.199.2.1/32")
	b.addAddress("hb", "d0", "10.199.2.1/32")
	b.addAddress("ha", "e0", "10.199.4.1/32")
	// 10.199.3.3 leads from hb into ha, which does not forward: packets to
	// it are dropped without an answer.
	b.run("ip", "-n", b.ns("hb"), "route", "add", "10.199.3.3/32", "via", "10.199.1.1")
	slow := []string{"HCCL_GO_CONNECT_TIMEOUT_MS=600000"}
	tests := []struct {
		name   string
		places [2]placement
		want   [2]string // in each rank's error, besides its peer's address
	}{
		{"wrong interface: no route", [2]placement{
			{NS: "ha", Env: []string{"HCCL_GO_SOCKET_IFNAME=e0"}},
			{NS: "hb", StoreHost: "10.199.1.1"},
		}, [2]string{"rank 1 has not linked with this rank", "cannot reach rank 0 at"}},
		{"same address on every host: refused", [2]placement{
			{NS: "ha", Env: []string{"HCCL_GO_SOCKET_IFNAME=d0"}},
			{NS: "hb", Env: []string{"HCCL_GO_SOCKET_IFNAME=d0"}},
		}, [2]string{"rank 1 has not linked with this rank", "cannot reach rank 0 at"}},
		{"no answer", [2]placement{
			{NS: "ha", StoreHost: "10.199.1.1", Advertise: "10.199.3.3"},
			{NS: "hb", StoreHost: "10.199.1.1"},
		}, [2]string{"rank 1 has not linked with this rank", "cannot reach rank 0 at"}},
		{"loopback across hosts", [2]placement{
			{NS: "ha", Env: []string{"HCCL_GO_SOCKET_IFNAME=lo"}},
			{NS: "hb", StoreHost: "10.199.1.1"},
		}, [2]string{"which only its own host can reach", "which only its own host can reach"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			places := tc.places[:]
			for r := range places {
				places[r].Env = append(append([]string{fmt.Sprintf("HCCL_GO_HOST_ID=h%d", r)}, places[r].Env...), slow...)
			}
			dir := t.TempDir()
			out := run(t, b, dir, places, oneAllReduce, 90*time.Second)
			addrs := published(t, dir, len(places))
			for r, o := range out {
				peer := 1 - r
				t.Logf("rank %d failed after %v: %s", r, o.Elapsed.Round(100*time.Millisecond), lastLine(o.Log))
				require.Error(t, o.Err, "rank %d", r)
				assert.Contains(t, o.Log, tc.want[r], "rank %d", r)
				assert.Contains(t, o.Log, addrs[peer], "rank %d names rank %d's address", r, peer)
				assert.Contains(t, o.Log, fmt.Sprintf("rank %d", peer), "rank %d", r)
				assert.Contains(t, o.Log, "HCCL_GO_SOCKET_IFNAME", "rank %d", r)
				// 5-6 s measured (at once for loopback); the bound leaves room
				// for a loaded machine and is far below the connect timeout.
				assert.Less(t, o.Elapsed, unreachableBound, "rank %d failed only after %v", r, o.Elapsed)
			}
		})
	}
}

// unreachableBound is how long a rank may take to fail on an address its
// peer cannot reach.
const unreachableBound = 30 * time.Second

// TestIPv6Addresses: the hosts have only IPv6 addresses; ranks publish
// "[addr]:port" and connect, whether the address comes from the route to
// an IPv6 store host, from HCCL_GO_SOCKET_IFNAME, or from a wildcard
// HCCL_GO_LISTEN_ADDR.
func TestIPv6Addresses(t *testing.T) {
	b := newBed(t)
	b.addHost("ha")
	b.addHost("hb")
	b.link("ha", "va", "hb", "vb", "1gbit", "256kb")
	for _, a := range [][3]string{{"ha", "va", "fd99::1/64"}, {"hb", "vb", "fd99::2/64"}} {
		if out, err := b.cmd("ip", "-n", b.ns(a[0]), "addr", "add", a[2], "dev", a[1], "nodad"); err != nil {
			t.Skipf("no IPv6 in network namespaces: %v: %s", err, out)
		}
	}
	tests := []struct {
		name  string
		env   [2][]string
		store string
	}{
		{"route to the store", [2][]string{nil, nil}, "fd99::1"},
		{"HCCL_GO_SOCKET_IFNAME", [2][]string{{"HCCL_GO_SOCKET_IFNAME=va"}, {"HCCL_GO_SOCKET_IFNAME=vb"}}, ""},
		{"wildcard HCCL_GO_LISTEN_ADDR", [2][]string{{"HCCL_GO_LISTEN_ADDR=[::]:0"}, {"HCCL_GO_LISTEN_ADDR=[::]:0"}}, "[fd99::1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			places := []placement{
				{NS: "ha", Env: append([]string{"HCCL_GO_HOST_ID=ha"}, tc.env[0]...), StoreHost: tc.store},
				{NS: "hb", Env: append([]string{"HCCL_GO_HOST_ID=hb"}, tc.env[1]...), StoreHost: tc.store},
			}
			res := launch(t, b, t.TempDir(), places, oneAllReduce, time.Minute)["init"]
			t.Logf("published: %v", res[0].Addrs)
			assert.True(t, strings.HasPrefix(res[0].Addrs[0], "[fd99::1]:"), res[0].Addrs[0])
			assert.True(t, strings.HasPrefix(res[0].Addrs[1], "[fd99::2]:"), res[0].Addrs[1])
			assert.Equal(t, []string{"self", "tcp"}, res[0].Transports)
		})
	}
}

// published reads the addresses the ranks published in the first variant.
func published(t *testing.T, dir string, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for r := range addrs {
		data, err := os.ReadFile(filepath.Join(dir, "rv0", "addr", fmt.Sprint(r)))
		require.NoError(t, err, "rank %d published no address", r)
		addrs[r] = string(data)
	}
	return addrs
}

func lastLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	return lines[len(lines)-1]
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
