package pgbackend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// HCCL_GO_SOCKET_IFNAME selects interfaces as NCCL_SOCKET_IFNAME does.
func TestIfFilter(t *testing.T) {
	lo := netIface{Name: "lo", Loopback: true}
	all := []netIface{lo, {Name: "eth0"}, {Name: "eth0.100"}, {Name: "eth1"}, {Name: "ib0"}, {Name: "docker0"}}
	tests := []struct {
		spec string
		want []string
	}{
		{"eth", []string{"eth0", "eth0.100", "eth1"}},
		{"eth0", []string{"eth0", "eth0.100"}}, // a prefix, as in NCCL
		{"=eth0", []string{"eth0"}},
		{"eth1,ib", []string{"eth1", "ib0"}},
		{" eth1 , ib0 ", []string{"eth1", "ib0"}},
		{"^docker", []string{"eth0", "eth0.100", "eth1", "ib0"}}, // never loopback when excluding
		{"^docker,lo", []string{"eth0", "eth0.100", "eth1", "ib0"}},
		{"^eth0", []string{"eth1", "ib0", "docker0"}},
		{"^=eth0", []string{"eth0.100", "eth1", "ib0", "docker0"}},
		{"^=eth0,docker0", []string{"eth0.100", "eth1", "ib0"}},
		{"lo", []string{"lo"}},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			f, err := parseIfFilter(tc.spec)
			require.NoError(t, err)
			var got []string
			for _, ifc := range all {
				if f.selects(ifc) {
					got = append(got, ifc.Name)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []string{"^", "=", "^=", ",", " , "} {
		_, err := parseIfFilter(bad)
		assert.Error(t, err, "%q", bad)
	}
}
