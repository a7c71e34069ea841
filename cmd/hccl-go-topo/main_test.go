package main

import (
	"bytes"
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

func TestErrors(t *testing.T) {
	var out bytes.Buffer
	assert.True(t, errors.Is(run(nil, &out), flag.ErrHelp))
	assert.ErrorContains(t, run([]string{"bogus"}, &out), "unknown command")
	assert.ErrorContains(t, run([]string{"ring"}, &out), "one topology file")
	assert.ErrorContains(t, run([]string{"ring", "/nonexistent"}, &out), "load topology")
	assert.ErrorContains(t, run([]string{"simulate", "--size", "big"}, &out), "--size")
}
