package topo

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Link is the measured (or declared) performance of the link between two
// ranks, the same in both directions.
type Link struct {
	// Latency is the one-way time of an empty message.
	Latency time.Duration
	// Bandwidth is what one stream of bytes gets, in bytes per second.
	Bandwidth float64
}

// time is the α-β time of one message of nbytes over the link, in seconds.
func (l Link) time(nbytes float64) float64 {
	return l.Latency.Seconds() + nbytes/l.Bandwidth
}

func (l Link) validate() error {
	switch {
	case l.Latency < 0:
		return fmt.Errorf("negative latency %v", l.Latency)
	case math.IsNaN(l.Bandwidth) || math.IsInf(l.Bandwidth, 0) || l.Bandwidth <= 0:
		return fmt.Errorf("bandwidth %g B/s is not a positive finite number", l.Bandwidth)
	}
	return nil
}

// RankInfo is where a rank lives.
type RankInfo struct {
	// Host is the host identity (see LocalIdentity); ranks with equal Host
	// share memory.
	Host string
	// NUMA is the rank's NUMA node, -1 when unknown.
	NUMA int
}

// Graph is a communicator's ranks and the link between every pair. Links
// are symmetric: SetLink(i, j) sets both directions.
type Graph struct {
	ranks []RankInfo
	links []Link // n×n, row-major; the diagonal is unused
}

// NewGraph returns a graph of n ranks with unknown hosts ("") and NUMA
// nodes (-1) and unset (zero) links; fill it with SetRank and SetLink.
func NewGraph(n int) *Graph {
	g := &Graph{ranks: make([]RankInfo, n), links: make([]Link, n*n)}
	for i := range g.ranks {
		g.ranks[i].NUMA = -1
	}
	return g
}

// Size is the number of ranks.
func (g *Graph) Size() int { return len(g.ranks) }

// Rank returns rank i's host and NUMA node.
func (g *Graph) Rank(i int) RankInfo { return g.ranks[i] }

// SetRank sets rank i's host and NUMA node.
func (g *Graph) SetRank(i int, r RankInfo) { g.ranks[i] = r }

// HostIDs returns every rank's host identity, in rank order.
func (g *Graph) HostIDs() []string {
	ids := make([]string, len(g.ranks))
	for i, r := range g.ranks {
		ids[i] = r.Host
	}
	return ids
}

// Link returns the link between ranks i and j (i != j).
func (g *Graph) Link(i, j int) Link { return g.links[i*len(g.ranks)+j] }

// SetLink sets the link between ranks i and j, both directions.
func (g *Graph) SetLink(i, j int, l Link) {
	n := len(g.ranks)
	g.links[i*n+j] = l
	g.links[j*n+i] = l
}

// Bandwidth is shorthand for g.Link(i, j).Bandwidth.
func (g *Graph) Bandwidth(i, j int) float64 { return g.links[i*len(g.ranks)+j].Bandwidth }

// Validate checks that the graph is usable: at least one rank, every rank
// on a named host, every link with a non-negative latency and a positive
// finite bandwidth.
func (g *Graph) Validate() error {
	n := len(g.ranks)
	if n == 0 {
		return errors.New("topology has no ranks")
	}
	for i, r := range g.ranks {
		if r.Host == "" {
			return fmt.Errorf("rank %d has no host", i)
		}
		if r.NUMA < -1 {
			return fmt.Errorf("rank %d: NUMA node %d (want >= 0, or -1 for unknown)", i, r.NUMA)
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if err := g.Link(i, j).validate(); err != nil {
				return fmt.Errorf("link %d-%d: %w", i, j, err)
			}
		}
	}
	return nil
}
