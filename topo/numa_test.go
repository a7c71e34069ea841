package topo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSysfs writes a node directory with the given cpulists, a status
// file with allowed CPUs, and a stat file whose field 39 is cpu.
func fakeSysfs(t *testing.T, cpulists map[string]string, allowed string, cpu string) numaSources {
	t.Helper()
	dir := t.TempDir()
	nodes := filepath.Join(dir, "node")
	for node, list := range cpulists {
		require.NoError(t, os.MkdirAll(filepath.Join(nodes, node), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(nodes, node, "cpulist"), []byte(list+"\n"), 0o644))
	}
	require.NoError(t, os.MkdirAll(nodes, 0o755))
	status := filepath.Join(dir, "status")
	require.NoError(t, os.WriteFile(status, []byte("Name:\tx\nCpus_allowed_list:\t"+allowed+"\nMems_allowed_list:\t0-1\n"), 0o644))
	// Fields 3..38 are filler; the command name holds a space and a ')'.
	stat := "1234 (my (odd) proc) S"
	for f := 4; f <= 38; f++ {
		stat += " 0"
	}
	stat += " " + cpu + " 0 0\n"
	statPath := filepath.Join(dir, "stat")
	require.NoError(t, os.WriteFile(statPath, []byte(stat), 0o644))
	return numaSources{nodeDir: nodes, statusPath: status, statPath: statPath}
}

func TestNUMANode(t *testing.T) {
	twoNodes := map[string]string{"node0": "0-3,8-11", "node1": "4-7,12-15"}
	for _, tc := range []struct {
		name     string
		cpulists map[string]string
		allowed  string
		cpu      string
		want     int
		pinned   int // PinnedNUMANode's answer
	}{
		{"pinned to node 1", twoNodes, "4-5", "0", 1, 1},
		{"unpinned, runs on node 0", twoNodes, "0-15", "9", 0, -1},
		{"unpinned, runs on node 1", twoNodes, "0-15", "13", 1, -1},
		{"single node", map[string]string{"node0": "0-1"}, "0-1", "1", 0, 0},
		{"no sysfs nodes", map[string]string{}, "0-1", "1", -1, -1},
		{"cpu in no node", twoNodes, "0-31", "20", -1, -1},
		{"unreadable stat", twoNodes, "0-15", "x", -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeSysfs(t, tc.cpulists, tc.allowed, tc.cpu)
			assert.Equal(t, tc.want, s.node())
			assert.Equal(t, tc.pinned, s.pinned())
			assert.Equal(t, len(tc.cpulists), s.nodes())
		})
	}
}

func TestNUMANodeHere(t *testing.T) {
	n := NUMANode()
	assert.GreaterOrEqual(t, n, -1)
	t.Logf("this process runs on NUMA node %d", n)
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"", nil, false},
		{"0", []int{0}, false},
		{"0-2,5,7-8", []int{0, 1, 2, 5, 7, 8}, false},
		{"3-1", nil, true},
		{"a", nil, true},
		{"0-x", nil, true},
		{"0-99999999", nil, true},
	} {
		got, err := parseCPUList(tc.in)
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
