package topo

import (
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimulateLargeCluster(t *testing.T) {
	cfg, err := ParseSimArgs(strings.Fields("--hosts 1024 --ranks-per-host 8 --size 1GiB --inter-bw 200Gbit --intra-bw 100GB"))
	require.NoError(t, err)
	res, err := Simulate(cfg)
	require.NoError(t, err)
	t.Logf("simulated in %v:\n%s", res.Elapsed, res.Table())
	assert.Equal(t, 8192, res.Ranks)
	// "A few seconds" is a property to measure (README), not to assert on a
	// shared machine; this bound only catches an accidental blow-up.
	assert.Less(t, res.Elapsed, 60*time.Second)
	names := []string{}
	for _, a := range res.Algos {
		names = append(names, a.Algo)
		assert.Positive(t, a.Time)
		assert.InEpsilon(t, a.AlgBW*2*8191/8192, a.BusBW, 1e-12)
	}
	assert.ElementsMatch(t, []string{AlgoRing, AlgoHD, AlgoRD, AlgoHier}, names)
	// The flat ring and the hierarchy both move ~2 bytes per payload byte
	// through each host NIC: busbw near the NIC's 25 GB/s, not above it.
	for _, a := range res.Algos {
		assert.Less(t, a.BusBW, 25e9*1.01, a.Algo)
	}
}

func TestSimulateJSON(t *testing.T) {
	out, err := SimulateJSON(`{"hosts": 4, "ranks_per_host": 2, "size": "64MiB", "inter-bw": "10Gbit", "intra_bw": "50GB", "op": "all_gather"}`)
	require.NoError(t, err)
	var res struct {
		SimResult
		Table string `json:"table"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, OpAllGather, res.Op)
	assert.Equal(t, int64(64<<20), res.Bytes)
	assert.Equal(t, 8, res.Ranks)
	assert.Contains(t, res.Table, "chosen: "+res.Chosen)
	assert.NotEmpty(t, res.Algos)

	for _, tc := range []struct{ args, err string }{
		{`[1]`, "arguments"},
		{`{"hosts": [1]}`, "want a string or a number"},
		{`{"bogus": 1}`, "flag provided but not defined"},
		{`{"size": "1Gbit"}`, "--size"},
		{`{"op": "alltoall"}`, "unknown op"},
		{`{"hosts": 0}`, "at least 1"},
	} {
		_, err := SimulateJSON(tc.args)
		assert.ErrorContains(t, err, tc.err, tc.args)
	}
}

func TestSimulateTopoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topo.json")
	require.NoError(t, hccl8(30e6).Save(path))
	cfg, err := ParseSimArgs([]string{"--topo-file", path, "--size", "64MiB"})
	require.NoError(t, err)
	res, err := Simulate(cfg)
	require.NoError(t, err)
	t.Logf("\n%s", res.Table())
	assert.Equal(t, 8, res.Ranks)
	assert.Contains(t, []string{AlgoHier, AlgoHD}, res.Chosen)
}

func TestParseSimArgsErrors(t *testing.T) {
	_, err := ParseSimArgs([]string{"-h"})
	assert.True(t, errors.Is(err, flag.ErrHelp))
	_, err = ParseSimArgs([]string{"extra"})
	assert.ErrorContains(t, err, "unexpected argument")
	_, err = ParseSimArgs([]string{"--inter-bw", "fast", "--intra-lat", "1"})
	assert.ErrorContains(t, err, "--inter-bw")
	assert.ErrorContains(t, err, "--intra-lat")
	assert.Contains(t, SimUsage(), "-ranks-per-host")
}

// --compression fp16 halves the network's share: the hierarchy of 4 hosts
// of 2 ranks at 10 Gbit/s takes about half as long with free local work,
// and only the algorithms that compress are listed.
func TestSimulateCompression(t *testing.T) {
	run := func(extra string) SimResult {
		cfg, err := ParseSimArgs(strings.Fields("--hosts 4 --ranks-per-host 2 --size 256MiB --inter-bw 10Gbit " + extra))
		require.NoError(t, err)
		res, err := Simulate(cfg)
		require.NoError(t, err)
		return res
	}
	plain, comp := run(""), run("--compression fp16 --codec-bw 0")
	t.Logf("\n%s\n%s", plain.Table(), comp.Table())
	hier := func(r SimResult) time.Duration {
		for _, a := range r.Algos {
			if a.Algo == AlgoHier {
				return a.Time
			}
		}
		t.Fatalf("no hier in %v", r.Algos)
		return 0
	}
	assert.InEpsilon(t, 0.5, hier(comp).Seconds()/hier(plain).Seconds(), 0.01)
	assert.Len(t, comp.Algos, 2)
	assert.Contains(t, comp.Topology, "16-bit floats on the wire")
	_, err := ParseSimArgs([]string{"--compression", "int8"})
	require.Error(t, err)
}
