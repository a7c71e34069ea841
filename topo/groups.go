package topo

import (
	"cmp"
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
	return fastClusters(g)
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

// fastClusters adds links from the fastest down (Kruskal's order) to a
// union-find and stops after the first bandwidth level at which the
// components are k >= 2 equal groups of 2 or more: O(n² log n).
func fastClusters(g *Graph) [][]int {
	n := g.Size()
	type edge struct {
		a, b int
		bw   float64
	}
	edges := make([]edge, 0, n*(n-1)/2)
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			edges = append(edges, edge{a, b, g.Bandwidth(a, b)})
		}
	}
	slices.SortStableFunc(edges, func(x, y edge) int { return cmp.Compare(y.bw, x.bw) })
	u := newUnionFind(n)
	for i, e := range edges {
		u.union(e.a, e.b)
		if i+1 < len(edges) && edges[i+1].bw == e.bw {
			continue // finish the level first
		}
		if k := u.sets; k >= 2 && k < n && n%k == 0 && u.largest == n/k {
			return u.groups()
		}
	}
	return nil
}

// unionFind tracks connected components, their count and the largest size.
type unionFind struct {
	parent, size  []int
	sets, largest int
}

func newUnionFind(n int) *unionFind {
	u := &unionFind{parent: make([]int, n), size: make([]int, n), sets: n, largest: 1}
	for i := range u.parent {
		u.parent[i], u.size[i] = i, 1
	}
	return u
}

func (u *unionFind) find(a int) int {
	for u.parent[a] != a {
		u.parent[a] = u.parent[u.parent[a]]
		a = u.parent[a]
	}
	return a
}

func (u *unionFind) union(a, b int) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	if u.size[ra] < u.size[rb] {
		ra, rb = rb, ra
	}
	u.parent[rb] = ra
	u.size[ra] += u.size[rb]
	u.sets--
	u.largest = max(u.largest, u.size[ra])
}

// groups lists the components, each sorted, ordered by lowest rank.
func (u *unionFind) groups() [][]int {
	index := make(map[int]int)
	var out [][]int
	for r := range u.parent {
		root := u.find(r)
		k, ok := index[root]
		if !ok {
			k = len(out)
			index[root] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], r)
	}
	return out
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
