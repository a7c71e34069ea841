package topo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkRecord is a scale run record of 2 hosts × 2 ranks (as report.py
// writes it) with op times that are the model's own predictions times
// factor, for ring, and for the library's choice.
func checkRecord(t *testing.T, factor float64, withTopology bool) []byte {
	t.Helper()
	c := Cluster{Hosts: 2, RanksPerHost: 2, Intra: Link{Latency: 20 * time.Microsecond, Bandwidth: 3e9},
		Inter: Link{Latency: 60 * time.Microsecond, Bandwidth: 3e9}}
	g := c.Graph()
	p := Params{ReduceBandwidth: 1e10, CopyBandwidth: 4e10, ArenaHier: true}
	m, err := NewCostModel(g, p)
	require.NoError(t, err)
	var ops []map[string]any
	for _, n := range []int{64, 1 << 20} {
		ring, err := m.Predict(OpAllReduce, AlgoRing, n)
		require.NoError(t, err)
		hier, err := m.Predict(OpAllReduce, AlgoHier, n)
		require.NoError(t, err)
		rd, err := m.Predict(OpAllReduce, AlgoRD, n)
		require.NoError(t, err)
		_, chosen, _, err := m.ChooseFrom(OpAllReduce, n, implementedAlgos[OpAllReduce])
		require.NoError(t, err)
		ops = append(ops,
			map[string]any{"config": "rd", "op": "allreduce", "algo": "rd", "bytes": n, "us": rd.Seconds() * 1e6 * factor, "us_min": rd.Seconds() * 1e6},
			map[string]any{"config": "ring", "op": "allreduce", "algo": "ring", "bytes": n, "us": ring.Seconds() * 1e6 * factor},
			map[string]any{"config": "hier", "op": "allreduce", "algo": "hier", "bytes": n, "us": hier.Seconds() * 1e6 * factor},
			map[string]any{"config": "auto", "op": "allreduce", "algo": "auto", "bytes": n, "us": chosen.Seconds() * 1e6 * factor})
	}
	model := map[string]any{"source": "probe", "reduce_bw": p.ReduceBandwidth, "copy_bw": p.CopyBandwidth, "arena_hier": true}
	pair := func(a float64) [2]float64 { return [2]float64{a, a} }
	summary := map[string]any{
		"nranks": 4, "ranks_per_host": 2, "api": "C API", "init_call_s": pair(0.2), "cpu_init_s": pair(0.05), "cores": 2,
		"per_rank": map[string]any{"after_init": map[string]any{"sockets": pair(2), "fds": pair(16), "anon_kb_added": pair(5000)}},
		"op_times": ops,
		"infos":    map[string]any{"auto": map[string]any{"model": model}, "ring": map[string]any{"model": model}, "hier": map[string]any{"model": model}, "rd": map[string]any{"model": model}},
	}
	if withTopology {
		summary["topology"] = g
	}
	b, err := json.Marshal(map[string]any{"summary": summary})
	require.NoError(t, err)
	return b
}

func TestCheckRuns(t *testing.T) {
	res, err := CheckRuns([]string{"run"}, [][]byte{checkRecord(t, 2, true)}, "0")
	require.NoError(t, err)
	t.Log("\n" + res.Table())
	byWhat := map[string]CheckRow{}
	ops := 0
	for _, r := range res.Rows {
		assert.Equal(t, "2x2", r.Layout)
		assert.InDelta(t, 2, r.Oversubscription, 0)
		if r.Kind == "op" {
			ops++
			assert.InEpsilon(t, 2, r.Ratio, 1e-6, r.Algo)
			if r.What != "op time" {
				assert.Contains(t, r.Note, "choice right", r)
			}
			continue
		}
		byWhat[r.What] = r
	}
	assert.Equal(t, 8, ops)
	assert.InDelta(t, 1, byWhat["sockets per rank (max), links at init"].Ratio, 0)
	assert.InDelta(t, 1, byWhat["fds per rank (max)"].Ratio, 0)
	assert.Contains(t, byWhat["init CPU per rank"].Note, "probing")
	require.Len(t, res.Summary, 2)
	assert.Contains(t, res.Summary[1], "best call/model: up to 64 KiB 1, geometric mean 1.00")
	assert.Contains(t, res.Summary[0], "up to 64 KiB 3, geometric mean 2.00")
	assert.Contains(t, res.Summary[0], "right in 2 of 2")

	for _, tc := range []struct {
		data []byte
		err  string
	}{
		{checkRecord(t, 1, false), "without the topology"},
		{[]byte(`{"summary": {"nranks": 0}}`), "not a scale run record"},
		{[]byte(`[`), "unexpected end"},
	} {
		_, err := CheckRuns([]string{"bad"}, [][]byte{tc.data}, "0")
		assert.ErrorContains(t, err, tc.err)
		assert.True(t, strings.HasPrefix(err.Error(), "check: bad:"), err.Error())
	}
}
