package topo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSaveLoadIsExact(t *testing.T) {
	for name, g := range map[string]*Graph{
		"uniform":   uniformGraph(5, 9),
		"clustered": clusteredGraph(6, 12),
		"hccl8":     hccl8(37.5e6),
	} {
		t.Run(name, func(t *testing.T) {
			g.SetRank(0, RankInfo{Host: g.Rank(0).Host, NUMA: 1})
			path := filepath.Join(t.TempDir(), "topo.json")
			require.NoError(t, g.Save(path))
			back, err := Load(path)
			require.NoError(t, err)
			assert.Equal(t, g, back)
			assert.Equal(t, OrderRing(g), OrderRing(back), "the dumped graph reloads to the same ring")
		})
	}
}

func TestLoadHandWritten(t *testing.T) {
	// Case B: one default slow link, four fast pairs.
	text := `{
	  "format": "hccl-go-topo", "version": 1,
	  "ranks": [{"host": "n0"}, {"host": "n1"}, {"host": "n2"}, {"host": "n3"},
	            {"host": "n4", "numa": 0}, {"host": "n5"}, {"host": "n6"}, {"host": "n7"}],
	  "default_link": {"latency_ns": 20000, "bytes_per_s": 1e7},
	  "links": [{"ranks": [4, 0], "latency_ns": 20000, "bytes_per_s": 3e7},
	            {"ranks": [1, 5], "latency_ns": 20000, "bytes_per_s": 3e7},
	            {"ranks": [2, 6], "latency_ns": 20000, "bytes_per_s": 3e7},
	            {"ranks": [3, 7], "latency_ns": 20000, "bytes_per_s": 3e7}]
	}`
	path := filepath.Join(t.TempDir(), "b.json")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	g, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, 8, g.Size())
	assert.Equal(t, RankInfo{Host: "n4", NUMA: 0}, g.Rank(4))
	assert.Equal(t, RankInfo{Host: "n5", NUMA: -1}, g.Rank(5))
	assert.Equal(t, Link{Latency: 20 * time.Microsecond, Bandwidth: 3e7}, g.Link(0, 4))
	assert.Equal(t, 1e7, g.Bandwidth(5, 6))
	assert.Equal(t, [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}, HierarchyGroups(g))
}

func TestLoadRejectsBadFiles(t *testing.T) {
	const head = `"format": "hccl-go-topo", "version": 1`
	const ranks2 = `"ranks": [{"host": "a"}, {"host": "b"}]`
	for _, tc := range []struct{ name, text, err string }{
		{"not json", `{`, "decode topology"},
		{"wrong format", `{"format": "nccl", "version": 1}`, `format is "nccl"`},
		{"future version", `{"format": "hccl-go-topo", "version": 2}`, "version 2 is not supported"},
		{"no ranks", `{` + head + `, "ranks": []}`, "no ranks"},
		{"unknown field", `{` + head + `, ` + ranks2 + `, "linkz": []}`, "unknown field"},
		{"missing link", `{` + head + `, ` + ranks2 + `, "links": []}`, "no link between ranks 0 and 1"},
		{"out of range", `{` + head + `, ` + ranks2 + `, "links": [{"ranks": [0, 2], "bytes_per_s": 1}]}`, "outside [0, 2)"},
		{"self link", `{` + head + `, ` + ranks2 + `, "links": [{"ranks": [1, 1], "bytes_per_s": 1}]}`, "to itself"},
		{"twice", `{` + head + `, ` + ranks2 + `, "links": [{"ranks": [0, 1], "bytes_per_s": 1}, {"ranks": [1, 0], "bytes_per_s": 1}]}`, "listed twice"},
		{"zero bandwidth", `{` + head + `, ` + ranks2 + `, "links": [{"ranks": [0, 1], "bytes_per_s": 0}]}`, "link 0-1: bandwidth"},
		{"negative latency", `{` + head + `, ` + ranks2 + `, "links": [{"ranks": [0, 1], "latency_ns": -5, "bytes_per_s": 1}]}`, "negative latency"},
		{"no host", `{` + head + `, "ranks": [{"host": ""}, {"host": "b"}], "default_link": {"bytes_per_s": 1}}`, "rank 0 has no host"},
		{"bad numa", `{` + head + `, "ranks": [{"host": "a", "numa": -3}, {"host": "b"}], "default_link": {"bytes_per_s": 1}}`, "NUMA node -3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))
			_, err := Load(path)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.err)
			assert.True(t, strings.Contains(err.Error(), path), "the error names the file: %v", err)
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorContains(t, err, "no such file")
}

func TestSaveRefusesInvalidGraph(t *testing.T) {
	g := NewGraph(2)
	err := g.Save(filepath.Join(t.TempDir(), "x.json"))
	assert.ErrorContains(t, err, "rank 0 has no host")
}
