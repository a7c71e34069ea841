package topo

import (
	"fmt"
	"math"
)

// Topology is what the cost model needs to know about a communicator. A
// Graph gives one (GraphTopology); so does a Cluster, without building the
// n² links of a large synthetic cluster.
type Topology interface {
	// Size is the number of ranks.
	Size() int
	// NumHosts is the number of hosts; HostOf maps a rank to [0, NumHosts).
	NumHosts() int
	HostOf(rank int) int
	// Link is the link between two ranks (a != b).
	Link(a, b int) Link
	// NIC is host h's network bandwidth per direction, in bytes/s. The
	// flows that leave (or enter) h for other hosts at the same time share
	// it equally; +Inf for no limit beyond each link's own bandwidth.
	NIC(h int) float64
}

// GraphTopology is a Graph seen by the cost model. A host's NIC is taken
// to be its fastest link to another host: one stream can fill it, and
// concurrent streams to other hosts share it (one NIC per host).
type GraphTopology struct {
	g      *Graph
	hostOf []int
	nic    []float64
}

var _ Topology = (*GraphTopology)(nil)

// NewGraphTopology checks g and derives hosts and NICs.
func NewGraphTopology(g *Graph) (*GraphTopology, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	hosts, hostOf := GroupHosts(g.HostIDs())
	t := &GraphTopology{g: g, hostOf: hostOf, nic: make([]float64, len(hosts))}
	for h := range t.nic {
		t.nic[h] = math.Inf(1)
		fastest := 0.0
		for _, a := range hosts[h] {
			for b := 0; b < g.Size(); b++ {
				if hostOf[b] != h {
					fastest = max(fastest, g.Bandwidth(a, b))
				}
			}
		}
		if fastest > 0 {
			t.nic[h] = fastest
		}
	}
	return t, nil
}

func (t *GraphTopology) Size() int           { return t.g.Size() }
func (t *GraphTopology) NumHosts() int       { return len(t.nic) }
func (t *GraphTopology) HostOf(rank int) int { return t.hostOf[rank] }
func (t *GraphTopology) Link(a, b int) Link  { return t.g.Link(a, b) }
func (t *GraphTopology) NIC(h int) float64   { return t.nic[h] }

// Cluster is a uniform synthetic cluster: Hosts hosts of RanksPerHost ranks
// each, ranks numbered host by host, every pair inside a host joined by
// Intra, every pair across hosts by Inter, and each host's traffic to other
// hosts sharing one NIC of Inter.Bandwidth per direction. It answers in
// O(1) per query, so the model scales to thousands of ranks.
type Cluster struct {
	Hosts, RanksPerHost int
	Intra, Inter        Link
}

var _ Topology = Cluster{}

func (c Cluster) validate() error {
	if c.Hosts < 1 || c.RanksPerHost < 1 {
		return fmt.Errorf("cluster of %d hosts x %d ranks: both must be at least 1", c.Hosts, c.RanksPerHost)
	}
	if c.RanksPerHost > 1 {
		if err := c.Intra.validate(); err != nil {
			return fmt.Errorf("intra-host link: %w", err)
		}
	}
	if c.Hosts > 1 {
		if err := c.Inter.validate(); err != nil {
			return fmt.Errorf("inter-host link: %w", err)
		}
	}
	return nil
}

func (c Cluster) Size() int           { return c.Hosts * c.RanksPerHost }
func (c Cluster) NumHosts() int       { return c.Hosts }
func (c Cluster) HostOf(rank int) int { return rank / c.RanksPerHost }
func (c Cluster) NIC(int) float64     { return c.Inter.Bandwidth }

func (c Cluster) Link(a, b int) Link {
	if c.HostOf(a) == c.HostOf(b) {
		return c.Intra
	}
	return c.Inter
}

// Graph builds the dense graph of a small cluster (for tests and files).
func (c Cluster) Graph() *Graph {
	g := NewGraph(c.Size())
	for a := 0; a < c.Size(); a++ {
		g.SetRank(a, RankInfo{Host: fmt.Sprintf("host%d", c.HostOf(a)), NUMA: -1})
		for b := a + 1; b < c.Size(); b++ {
			g.SetLink(a, b, c.Link(a, b))
		}
	}
	return g
}
