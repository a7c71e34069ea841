package pgbackend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Info carries the cost model's inputs (hccl-go-topo check rebuilds the
// model from them) when the communicator has one.
func TestInfoModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts []string
		want  bool
	}{
		{"one host", []string{"h", "h"}, false},
		{"two hosts", []string{"a", "b", "a", "b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := topoTestConfig()
			cfg.TopoProbe = "0"
			cs, errs := topoConnect(t, tc.hosts, sameConfigs(len(tc.hosts), cfg))
			requireConnected(t, cs, errs)
			for r, c := range cs {
				m := c.Info().Model
				require.Equal(t, tc.want, m != nil, "rank %d", r)
				if m == nil {
					continue
				}
				topo := c.Topology()
				assert.Equal(t, topo.Source, m.Source)
				assert.Equal(t, topo.Ring, m.Ring)
				assert.Equal(t, topo.Model.ArenaHier(), m.ArenaHier)
				p := topo.Model.Params()
				assert.Equal(t, p.CopyBandwidth, m.CopyBW)
				assert.Equal(t, p.ReduceBandwidth, m.ReduceBW)
				assert.Positive(t, m.CopyBW, "measured across hosts")
			}
		})
	}
}
