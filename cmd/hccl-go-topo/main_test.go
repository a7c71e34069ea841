package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimulate(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(strings.Fields("simulate --hosts 1024 --ranks-per-host 8 --size 1GiB --inter-bw 200Gbit --intra-bw 100GB"), &out))
	t.Log("\n" + out.String())
	assert.Contains(t, out.String(), "over 8192 ranks")
	assert.Contains(t, out.String(), "chosen: ")
}

func TestRing(t *testing.T) {
	c := topo.Cluster{
		Hosts: 2, RanksPerHost: 2,
		Intra: topo.Link{Latency: time.Microsecond, Bandwidth: 10e9},
		Inter: topo.Link{Latency: 10 * time.Microsecond, Bandwidth: 125e6},
	}
	path := filepath.Join(t.TempDir(), "t.json")
	require.NoError(t, c.Graph().Save(path))
	var out bytes.Buffer
	require.NoError(t, run([]string{"ring", path}, &out))
	assert.Contains(t, out.String(), "ring [0 1 2 3]")
	assert.Contains(t, out.String(), "hierarchy: 2 groups of 2: [[0 1] [2 3]]")
}

func TestScale(t *testing.T) {
	for _, tc := range []struct {
		args string
		want []string
	}{
		{"scale --hosts 2048 --ranks-per-host 8 --lazy-links 0", []string{"16384 ranks: 2048 hosts x 8 ranks", "TCP sockets                                  16376", "init dominated by: CPU: TCP connections", "memory by: TCP links"}},
		{"scale --hosts 2048 --ranks-per-host 8", []string{"lazy TCP links", "TCP sockets                                  2 ", "hier all_gather, reduce_scatter (every other host)      2047", "init dominated by: discovery"}},
		{"scale --hosts 1 --ranks-per-host 128", []string{"TCP sockets                                  0", "file descriptors                             392"}},
		{"scale --hosts 2048 --ranks-per-host 8 --lazy-links 0 --store-rate 2e5", []string{"rendezvous store (536936448 requests)", "init dominated by: rendezvous store"}},
	} {
		var out bytes.Buffer
		require.NoError(t, run(strings.Fields(tc.args), &out), tc.args)
		for _, w := range tc.want {
			assert.Contains(t, out.String(), w, tc.args)
		}
	}
}

// check reads the records of bench/results (the runs docs/scale.md cites).
func TestCheck(t *testing.T) {
	runs, err := filepath.Glob("../../bench/results/2026-12-03/sim-check/ops-2x1.json")
	require.NoError(t, err)
	if len(runs) == 0 {
		t.Skip("no recorded runs")
	}
	var out bytes.Buffer
	require.NoError(t, run(append([]string{"check"}, runs...), &out))
	assert.Contains(t, out.String(), "2 ranks as 2x1 (hosts x ranks), 1.0x oversubscribed")
	assert.Contains(t, out.String(), "# summary")
	out.Reset()
	require.NoError(t, run(append([]string{"check", "--json"}, runs...), &out))
	var res topo.CheckResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	assert.NotEmpty(t, res.Rows)
	assert.ErrorContains(t, run([]string{"check"}, &out), "want one or more")
	assert.ErrorContains(t, run([]string{"check", "--bogus"}, &out), "unknown flag")
	assert.ErrorContains(t, run([]string{"check", "/nonexistent.json"}, &out), "no such file")
}

func TestErrors(t *testing.T) {
	var out bytes.Buffer
	assert.True(t, errors.Is(run(nil, &out), flag.ErrHelp))
	assert.ErrorContains(t, run([]string{"bogus"}, &out), "unknown command")
	assert.ErrorContains(t, run([]string{"ring"}, &out), "one topology file")
	assert.ErrorContains(t, run([]string{"ring", "/nonexistent"}, &out), "load topology")
	assert.ErrorContains(t, run([]string{"simulate", "--size", "big"}, &out), "--size")
	assert.ErrorContains(t, run([]string{"scale", "--hosts", "0"}, &out), "at least 1")
}
