package topo

import (
	"fmt"
	"slices"
)

// NUMASlowRatio is the largest ratio of the bandwidth across NUMA nodes to
// the bandwidth within one (links inside a host) at which the cost model
// considers NUMA nodes a level of the hierarchy (AlgoNUMA). Above it the
// two are taken as equal: a probe's noise, or a machine whose memory is
// interleaved, must not split a host's arena for nothing.
const NUMASlowRatio = 0.8

// NUMASplit is how the hosts of a graph divide into NUMA nodes.
type NUMASplit struct {
	// Groups are the (host, NUMA node) groups, host after host in the
	// order of their lowest rank, each group's ranks increasing; a host
	// with a rank of unknown NUMA node (-1) stays one group. Nil when no
	// host spans two NUMA nodes.
	Groups [][]int
	// Ratio is the mean bandwidth of the links between ranks of one host
	// on different NUMA nodes over the mean of those between ranks of one
	// host on the same node (0 when either kind is missing).
	Ratio float64
}

// SplitNUMA finds g's (host, NUMA node) groups and how much slower the
// links across NUMA nodes are than those within one.
func SplitNUMA(g *Graph) NUMASplit {
	hosts, _ := GroupHosts(g.HostIDs())
	var s NUMASplit
	spans := false
	var sameSum, crossSum float64
	var sameN, crossN int
	for _, h := range hosts {
		byNode := map[int][]int{}
		known := true
		for _, r := range h {
			n := g.Rank(r).NUMA
			known = known && n >= 0
			byNode[n] = append(byNode[n], r)
		}
		if !known || len(byNode) < 2 {
			s.Groups = append(s.Groups, slices.Clone(h))
			continue
		}
		spans = true
		var groups [][]int
		for _, rs := range byNode {
			groups = append(groups, rs)
		}
		slices.SortFunc(groups, func(a, b []int) int { return a[0] - b[0] })
		s.Groups = append(s.Groups, groups...)
		for i, a := range h {
			for _, b := range h[i+1:] {
				if g.Rank(a).NUMA == g.Rank(b).NUMA {
					sameSum += g.Bandwidth(a, b)
					sameN++
				} else {
					crossSum += g.Bandwidth(a, b)
					crossN++
				}
			}
		}
	}
	if !spans {
		return NUMASplit{}
	}
	if sameN > 0 && crossN > 0 {
		s.Ratio = (crossSum / float64(crossN)) / (sameSum / float64(sameN))
	}
	return s
}

// Level says whether the split makes NUMA nodes a level of the hierarchy
// (some host spans two nodes, and its links across them are at most
// NUMASlowRatio as fast as within one), and why, in words for a log.
func (s NUMASplit) Level() (bool, string) {
	switch {
	case s.Groups == nil:
		return false, "the ranks of every host share one NUMA node (or a host's nodes are unknown)"
	case s.Ratio == 0:
		return false, "no two ranks of a host share a NUMA node, so a NUMA group has no arena to gain"
	case s.Ratio > NUMASlowRatio:
		return false, fmt.Sprintf("links across NUMA nodes are %.3gx as fast as within one (a level needs at most %.3gx)", s.Ratio, NUMASlowRatio)
	}
	return true, fmt.Sprintf("links across NUMA nodes are %.3gx as fast as within one", s.Ratio)
}

// numaSlowdown is how much longer an arena phase among the ranks of group
// takes than among ranks of one NUMA node: each rank reads its peers'
// data equally, the part from peers on other nodes at ratio times the
// speed, and the phase ends with its slowest rank. 1 without NUMA nodes
// (numa nil) or slower links across them.
func numaSlowdown(group, numa []int, ratio float64) float64 {
	if numa == nil || ratio <= 0 || ratio >= 1 || len(group) < 2 {
		return 1
	}
	worst := 1.0
	for _, a := range group {
		other := 0
		for _, b := range group {
			if numa[b] != numa[a] {
				other++
			}
		}
		x := float64(other) / float64(len(group)-1)
		worst = max(worst, 1-x+x/ratio)
	}
	return worst
}
