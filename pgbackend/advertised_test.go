package pgbackend

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

func TestLocalOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:5000":    true,
		"127.0.1.1:5000":    true,
		"[::1]:5000":        true,
		"localhost:5000":    true,
		"0.0.0.0:5000":      true,
		"[::]:5000":         true,
		"10.0.0.5:5000":     false,
		"[2001:db8::5]:500": false,
		"node0:5000":        false,
		"garbage":           false,
	} {
		assert.Equal(t, want, localOnly(addr), addr)
	}
}

// A rank that publishes loopback while a rank on another host publishes a
// network address fails every rank's check, with the same message.
func TestCheckAdvertised(t *testing.T) {
	tests := []struct {
		name  string
		addrs []string
		hosts []string
		err   string
	}{
		{"one host, loopback", []string{"127.0.0.1:1", "127.0.0.1:2"}, []string{"a", "a"}, ""},
		{"hosts emulated on one machine, all loopback", []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, []string{"a", "b", "c"}, ""},
		{"two hosts, network addresses", []string{"10.0.0.1:1", "10.0.0.2:2"}, []string{"a", "b"}, ""},
		{"loopback within a host beside network addresses", []string{"127.0.0.1:1", "10.0.0.1:2", "10.0.0.1:3"}, []string{"a", "a", "a"}, ""},
		{"unknown hosts", []string{"127.0.0.1:1", "10.0.0.2:2"}, nil, ""},
		{"loopback on one host, network on the other",
			[]string{"10.0.0.1:1", "127.0.0.1:2", "10.0.0.2:3"}, []string{"a", "b", "c"},
			`rank 1 publishes 127.0.0.1:2, which only its own host can reach, while rank 0 is on another host ("a", not "b") and publishes 10.0.0.1:1: set HCCL_GO_SOCKET_IFNAME`},
		{"IPv6 loopback", []string{"[::1]:1", "[2001:db8::2]:2"}, []string{"a", "b"}, "rank 0 publishes [::1]:1"},
		{"wildcard", []string{"10.0.0.1:1", "0.0.0.0:2"}, []string{"a", "b"}, "rank 1 publishes 0.0.0.0:2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for r := range tc.addrs { // every rank decides alike
				err := checkAdvertised(Rendezvous{Rank: r, Addrs: tc.addrs, HostIDs: tc.hosts})
				if tc.err == "" {
					assert.NoError(t, err, "rank %d", r)
				} else {
					assert.ErrorContains(t, err, tc.err, "rank %d", r)
				}
			}
		})
	}
}

// Connect fails at once on every rank when one publishes loopback across
// hosts, before dialing anything.
func TestConnectRefusesLoopbackAcrossHosts(t *testing.T) {
	cfg := testConfig()
	ls := make([]*tcp.Listener, 2)
	addrs := make([]string, 2)
	for i := range ls {
		l, err := tcp.Listen("127.0.0.1:0")
		require.NoError(t, err)
		ls[i], addrs[i] = l, l.Addr()
	}
	addrs[1] = "10.255.255.1:9" // as if rank 1 were on a network; nothing is dialed
	for r := range ls {
		_, err := Connect(t.Context(), ls[r], Rendezvous{Rank: r, Addrs: addrs, HostIDs: []string{"a", "b"}, Secret: []byte("s")}, cfg)
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), fmt.Sprintf("init rank %d of 2: rank 0 publishes %s, which only its own host can reach", r, addrs[0]))
	}
}

// An unreachable address fails the set-up with advice naming what this
// rank published and the variable to set.
func TestConnectAdvice(t *testing.T) {
	rv := Rendezvous{Rank: 1, Addrs: []string{"10.0.0.1:1", "10.0.0.2:2"}, HostIDs: []string{"a", "b"}}
	err := &transport.PeerError{Peer: 0, Op: "connect", Err: fmt.Errorf("%w: cannot reach rank 0 at 10.0.0.1:1", tcp.ErrUnreachable)}
	assert.Equal(t, " [this rank published 10.0.0.2:2; the address each rank publishes must be reachable from every other rank's host: "+ifnameAdvice+"]", connectAdvice(rv, err))

	rv.Addrs[0] = "127.0.0.1:1"
	assert.Contains(t, connectAdvice(rv, fmt.Errorf("timed out")), "rank 0 is on another host but publishes 127.0.0.1:1")
	rv.HostIDs = []string{"a", "a"}
	assert.Empty(t, connectAdvice(rv, fmt.Errorf("timed out")))
}
