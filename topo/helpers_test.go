package topo

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// uniformGraph is n ranks, each on its own host, every link with the same
// latency and a bandwidth drawn uniformly from [1, 100] GB/s.
func uniformGraph(seed uint64, n int) *Graph {
	rng := rand.New(rand.NewPCG(seed, 1))
	g := NewGraph(n)
	for i := 0; i < n; i++ {
		g.SetRank(i, RankInfo{Host: fmt.Sprintf("h%d", i), NUMA: -1})
		for j := i + 1; j < n; j++ {
			g.SetLink(i, j, Link{Latency: time.Microsecond, Bandwidth: (1 + 99*rng.Float64()) * 1e9})
		}
	}
	return g
}

// clusteredGraph puts n ranks at random on hosts of a few ranks: links
// inside a host are fast (50-100 GB/s), links across hosts slow (1-10 GB/s,
// with a few distinct values so that bottleneck ties are common).
func clusteredGraph(seed uint64, n int) *Graph {
	rng := rand.New(rand.NewPCG(seed, 2))
	hosts := 1 + n/3
	g := NewGraph(n)
	for i := 0; i < n; i++ {
		g.SetRank(i, RankInfo{Host: fmt.Sprintf("h%d", rng.IntN(hosts)), NUMA: 0})
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			l := Link{Latency: 5 * time.Microsecond, Bandwidth: float64(1+rng.IntN(4)) * 2.5e9}
			if g.Rank(i).Host == g.Rank(j).Host {
				l = Link{Latency: time.Microsecond, Bandwidth: (50 + 50*rng.Float64()) * 1e9}
			}
			g.SetLink(i, j, l)
		}
	}
	return g
}

// layoutGraph builds a graph from per-rank hosts and a link function.
func layoutGraph(hosts []string, link func(i, j int) Link) *Graph {
	g := NewGraph(len(hosts))
	for i, h := range hosts {
		g.SetRank(i, RankInfo{Host: h, NUMA: -1})
		for j := 0; j < i; j++ {
			g.SetLink(j, i, link(j, i))
		}
	}
	return g
}

// hccl8 is the 8-device layout of the HCCL description: pairs (0,4),
// (1,5), (2,6), (3,7) on fast links, all other pairs 3 times slower; each
// rank its own host.
func hccl8(fast float64) *Graph {
	hosts := make([]string, 8)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("ns%d", i)
	}
	return layoutGraph(hosts, func(i, j int) Link {
		if j-i == 4 {
			return Link{Latency: 20 * time.Microsecond, Bandwidth: fast}
		}
		return Link{Latency: 20 * time.Microsecond, Bandwidth: fast / 3}
	})
}

// twoLevel is a graph of ranks on the given hosts, intra-host links at
// intra bytes/s and 1 µs, inter-host links at inter bytes/s and 10 µs.
func twoLevel(hosts []string, intra, inter float64) *Graph {
	return layoutGraph(hosts, func(i, j int) Link {
		if hosts[i] == hosts[j] {
			return Link{Latency: time.Microsecond, Bandwidth: intra}
		}
		return Link{Latency: 10 * time.Microsecond, Bandwidth: inter}
	})
}

// tieredGraph draws every link's bandwidth from three levels (1, 2, 3
// GB/s): many rings tie on the bottleneck, and few reach the best one.
func tieredGraph(seed uint64, n int) *Graph {
	rng := rand.New(rand.NewPCG(seed, 3))
	g := NewGraph(n)
	for i := 0; i < n; i++ {
		g.SetRank(i, RankInfo{Host: fmt.Sprintf("h%d", i), NUMA: -1})
		for j := i + 1; j < n; j++ {
			g.SetLink(i, j, Link{Latency: time.Duration(1+rng.IntN(9)) * time.Microsecond, Bandwidth: float64(1+rng.IntN(3)) * 1e9})
		}
	}
	return g
}
