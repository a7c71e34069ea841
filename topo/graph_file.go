package topo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// The topology file (HCCL_GO_TOPO_FILE, HCCL_GO_TOPO_DUMP_FILE) is JSON:
//
//	{
//	  "format": "hccl-go-topo", "version": 1,
//	  "ranks": [{"host": "node-a", "numa": 0}, ...],          // index = rank
//	  "default_link": {"latency_ns": 5000, "bytes_per_s": 1.25e9}, // optional
//	  "links": [{"ranks": [0, 1], "latency_ns": 1000, "bytes_per_s": 1e10}, ...]
//	}
//
// Latencies are one-way, in nanoseconds; bandwidths in bytes per second.
// These units make Save and Load exact, so a reloaded graph gives the very
// same ring. Every pair of ranks needs a link: listed once in "links"
// (either order), or else taken from "default_link". Save writes every
// pair explicitly. Unknown fields are errors, so typos do not pass
// silently.

const (
	fileFormat  = "hccl-go-topo"
	fileVersion = 1
)

type fileRank struct {
	Host string `json:"host"`
	NUMA *int   `json:"numa,omitempty"` // absent: unknown (-1)
}

type fileLinkValue struct {
	LatencyNs int64   `json:"latency_ns"`
	BytesPerS float64 `json:"bytes_per_s"`
}

type fileLink struct {
	Ranks [2]int `json:"ranks"`
	fileLinkValue
}

type fileGraph struct {
	Format      string         `json:"format"`
	Version     int            `json:"version"`
	Ranks       []fileRank     `json:"ranks"`
	DefaultLink *fileLinkValue `json:"default_link,omitempty"`
	Links       []fileLink     `json:"links"`
}

func (v fileLinkValue) link() Link {
	return Link{Latency: time.Duration(v.LatencyNs), Bandwidth: v.BytesPerS}
}

func fileValue(l Link) fileLinkValue {
	return fileLinkValue{LatencyNs: int64(l.Latency), BytesPerS: l.Bandwidth}
}

// MarshalJSON writes the graph in the topology file format, every pair
// listed.
func (g *Graph) MarshalJSON() ([]byte, error) {
	n := g.Size()
	f := fileGraph{Format: fileFormat, Version: fileVersion, Ranks: make([]fileRank, n)}
	for i, r := range g.ranks {
		f.Ranks[i].Host = r.Host
		if r.NUMA >= 0 {
			numa := r.NUMA
			f.Ranks[i].NUMA = &numa
		}
	}
	f.Links = make([]fileLink, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			f.Links = append(f.Links, fileLink{Ranks: [2]int{i, j}, fileLinkValue: fileValue(g.Link(i, j))})
		}
	}
	return f.encode()
}

// encode writes the file with one rank or link per line, so that a person
// can read and diff it.
func (f *fileGraph) encode() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n \"format\": %q,\n \"version\": %d,\n \"ranks\": [", f.Format, f.Version)
	if err := encodeLines(&b, f.Ranks); err != nil {
		return nil, err
	}
	b.WriteString("],\n \"links\": [")
	if err := encodeLines(&b, f.Links); err != nil {
		return nil, err
	}
	b.WriteString("]\n}\n")
	return b.Bytes(), nil
}

func encodeLines[T any](b *bytes.Buffer, items []T) error {
	for i, it := range items {
		line, err := json.Marshal(it)
		if err != nil {
			return err
		}
		b.WriteString("\n  ")
		b.Write(line)
		if i < len(items)-1 {
			b.WriteByte(',')
		}
	}
	if len(items) > 0 {
		b.WriteString("\n ")
	}
	return nil
}

// UnmarshalJSON reads and validates the topology file format.
func (g *Graph) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileGraph
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("decode topology: %w", err)
	}
	parsed, err := f.graph()
	if err != nil {
		return err
	}
	*g = *parsed
	return nil
}

func (f *fileGraph) graph() (*Graph, error) {
	if f.Format != fileFormat {
		return nil, fmt.Errorf("topology: format is %q, want %q", f.Format, fileFormat)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("topology: version %d is not supported (this build reads version %d)", f.Version, fileVersion)
	}
	n := len(f.Ranks)
	if n == 0 {
		return nil, fmt.Errorf("topology: no ranks")
	}
	g := NewGraph(n)
	for i, r := range f.Ranks {
		info := RankInfo{Host: r.Host, NUMA: -1}
		if r.NUMA != nil {
			info.NUMA = *r.NUMA
		}
		g.SetRank(i, info)
	}
	seen := make([]bool, n*n)
	for k, l := range f.Links {
		a, b := l.Ranks[0], l.Ranks[1]
		switch {
		case a < 0 || a >= n || b < 0 || b >= n:
			return nil, fmt.Errorf("topology: link #%d names ranks %d-%d, outside [0, %d)", k, a, b, n)
		case a == b:
			return nil, fmt.Errorf("topology: link #%d joins rank %d to itself", k, a)
		case seen[a*n+b]:
			return nil, fmt.Errorf("topology: link %d-%d is listed twice", a, b)
		}
		seen[a*n+b], seen[b*n+a] = true, true
		g.SetLink(a, b, l.link())
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if seen[i*n+j] {
				continue
			}
			if f.DefaultLink == nil {
				return nil, fmt.Errorf("topology: no link between ranks %d and %d and no default_link", i, j)
			}
			g.SetLink(i, j, f.DefaultLink.link())
		}
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	return g, nil
}

// Load reads a topology file.
func Load(path string) (*Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load topology: %w", err)
	}
	g := new(Graph)
	if err := g.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("load topology %s: %w", path, err)
	}
	return g, nil
}

// Save writes the graph to path (via a temporary file and a rename, so a
// reader never sees half a file).
func (g *Graph) Save(path string) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("save topology: %w", err)
	}
	data, err := g.MarshalJSON()
	if err != nil {
		return fmt.Errorf("save topology: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("save topology: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("save topology: %w", err)
	}
	return nil
}
