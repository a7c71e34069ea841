package pgbackend

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
)

func TestConfigSources(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		options string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			assert.Equal(t, 30*time.Minute, c.Timeout)
			assert.Equal(t, "auto", c.Transport)
			assert.Equal(t, 1, c.StreamsPerPeer)
			assert.Equal(t, collectives.Auto, c.AlgoFor("allreduce"))
		}},
		{name: "env", env: map[string]string{"HCCL_GO_TIMEOUT_MS": "5000", "HCCL_GO_ALGO": "ring", "HCCL_GO_TRANSPORT": "TCP"},
			check: func(t *testing.T, c Config) {
				assert.Equal(t, 5*time.Second, c.Timeout)
				assert.Equal(t, collectives.Ring, c.AlgoFor("allreduce"))
				assert.Equal(t, "tcp", c.Transport)
			}},
		{name: "options override env", env: map[string]string{"HCCL_GO_TIMEOUT_MS": "5000"}, options: "timeout_ms=700; algo=allreduce=rd,broadcast=tree",
			check: func(t *testing.T, c Config) {
				assert.Equal(t, 700*time.Millisecond, c.Timeout)
				assert.Equal(t, collectives.RecursiveDoubling, c.AlgoFor("allreduce"))
				assert.Equal(t, collectives.Tree, c.AlgoFor("broadcast"))
			}},
		{name: "network settings", env: map[string]string{"HCCL_GO_SOCKET_IFNAME": "^docker,lo", "HCCL_GO_UNREACHABLE_MS": "2000"}, options: "listen_addr=[::]:0",
			check: func(t *testing.T, c Config) {
				assert.Equal(t, "^docker,lo", c.SocketIfname)
				assert.Equal(t, "[::]:0", c.ListenAddr)
				assert.Equal(t, 2*time.Second, c.UnreachableTimeout)
			}},
		{name: "default unreachable timeout", check: func(t *testing.T, c Config) { assert.Equal(t, 5*time.Second, c.UnreachableTimeout) }},
		{name: "bad ifname", options: "socket_ifname=^", wantErr: "interface names"},
		{name: "bad listen addr", env: map[string]string{"HCCL_GO_LISTEN_ADDR": "10.0.0.1"}, wantErr: "want host:port"},
		{name: "bad env value", env: map[string]string{"HCCL_GO_TIMEOUT_MS": "soon"}, wantErr: "HCCL_GO_TIMEOUT_MS"},
		{name: "bad transport", env: map[string]string{"HCCL_GO_TRANSPORT": "carrier-pigeon"}, wantErr: "auto|shm|tcp"},
		{name: "unknown option", options: "colour=blue", wantErr: `unknown option "colour"`},
		{name: "malformed option", options: "timeout_ms", wantErr: "key=value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := configFrom(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err == nil {
				err = c.ApplyOptions(tc.options)
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}
