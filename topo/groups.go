package topo

import (
	"slices"
)

// HierarchyGroups splits g's ranks into the groups a hierarchical
// algorithm works in: reduce-scatter inside each group, one exchange
// across groups, all-gather inside each group. It returns nil when no
// split into two or more equal groups of two or more ranks exists.
//
// The groups are the hosts when they split that way. Otherwise (every rank
// its own host, as in namespaces joined by links of two speeds) they are
// the clusters of fast links: for each bandwidth B from the fastest down,
// the connected components of the links of at least B; the first B that
// gives equal components of 2 or more ranks (and fewer than all) wins.
// Groups list their ranks in increasing order and are ordered by their
// lowest rank, so every rank computes the same groups.
func HierarchyGroups(g *Graph) [][]int {
	if hosts, _ := GroupHosts(g.HostIDs()); equalGroups(hosts, g.Size()) {
		return hosts
	}
	for _, b := range slices.Backward(distinctBandwidths(g)) {
		if groups := components(g, b); equalGroups(groups, g.Size()) {
			return groups
		}
	}
	return nil
}

// equalGroups: at least two groups, of equal size of at least two.
func equalGroups(groups [][]int, n int) bool {
	if len(groups) < 2 || len(groups) == n {
		return false
	}
	for _, gr := range groups {
		if len(gr) != len(groups[0]) {
			return false
		}
	}
	return true
}

// components are the connected components of the links of bandwidth >= b,
// each sorted, ordered by lowest rank.
func components(g *Graph, b float64) [][]int {
	n := g.Size()
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	var groups [][]int
	for start := 0; start < n; start++ {
		if comp[start] >= 0 {
			continue
		}
		id := len(groups)
		members := []int{start}
		comp[start] = id
		for k := 0; k < len(members); k++ {
			for j := 0; j < n; j++ {
				if comp[j] < 0 && j != members[k] && g.Bandwidth(members[k], j) >= b {
					comp[j] = id
					members = append(members, j)
				}
			}
		}
		slices.Sort(members)
		groups = append(groups, members)
	}
	return groups
}

// clusterGroups are a Cluster's hosts, when hierarchy applies.
func clusterGroups(c Cluster) [][]int {
	if c.Hosts < 2 || c.RanksPerHost < 2 {
		return nil
	}
	groups := make([][]int, c.Hosts)
	for h := range groups {
		groups[h] = make([]int, c.RanksPerHost)
		for i := range groups[h] {
			groups[h][i] = h*c.RanksPerHost + i
		}
	}
	return groups
}
