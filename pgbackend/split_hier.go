package pgbackend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/topo"
)

// A split whose members span hosts runs the hierarchical collectives as
// its root does (collectives/hier) when the root has them: on its default
// stream, an arena among its members on this host (when there are two or
// more) and one exchange across hosts. Its topology is the root's, cut
// down to its members: no rank exchanges anything, since every member
// holds the root's topology already, so every member derives the same
// groups, ring and model. Its other streams, which have no arena, run
// the flat algorithms over messages.

// connectSplitHier gives the split c of root the arena hierarchy when
// root has it and c's members span hosts with at least one host holding
// two or more of them (otherwise every arena phase would be a rank alone,
// and the flat algorithms serve as well).
func (c *Communicator) connectSplitHier(ctx context.Context, root *Communicator) error {
	// Every member must decide alike from what they share: the root's
	// topology (a rank alone on its host has no root arena).
	rt := root.topo
	if rt == nil || rt.hosts == nil || rt.model == nil || !c.cfg.ShmCollectives {
		return nil
	}
	ids := splitHostIDs(rt.hosts.Hosts, c.split.rootRanks)
	if hosts, _ := topo.GroupHosts(ids); topo.ArenaGroups(hosts) == nil {
		return nil
	}
	t, err := splitTopology(rt, c.split.rootRanks, ids, c.cfg)
	if err != nil {
		return fmt.Errorf("topology of the split's ranks: %w", err)
	}
	if t.hosts == nil {
		return nil // the model has no hierarchy for these ranks
	}
	hosts := t.hosts.Hosts
	mine := hosts[slices.IndexFunc(hosts, func(h []int) bool { return slices.Contains(h, c.rank) })]
	if len(mine) > 1 {
		ctx, cancel := context.WithTimeout(ctx, c.cfg.splitTimeout())
		defer cancel()
		ra := root.arenas[0]
		rootLocal := ra.Ranks()
		hostIndex := make([]int, len(mine))
		for j, r := range mine {
			hostIndex[j], _ = slices.BinarySearch(rootLocal, c.split.rootRanks[r])
		}
		name := fmt.Sprintf("%s-x%d-h%v", root.shmJob, c.split.space, rootRanksOf(c.split.rootRanks, mine))
		a, err := subArena(ctx, ra, c.rank, mine, hostIndex, name, splitDataBytes)
		if err != nil {
			return fmt.Errorf("shared-memory arena of the split's ranks on this host: %w", err)
		}
		c.arenas[StreamDefault] = a
		for _, r := range mine {
			if r != c.rank && c.transports != nil && !strings.HasSuffix(c.transports[r], "+arena") {
				c.transports[r] += "+arena"
			}
		}
	}
	h, err := hier.New(c.ep, hier.ArenaHost(c.arenas[StreamDefault]), *t.hosts)
	if err != nil {
		return fmt.Errorf("hierarchical collectives of the split: %w", err)
	}
	c.topo, c.hiers[StreamDefault] = t, h
	return nil
}

// splitHostIDs names the root's host of every member of a split (rootRanks
// are the members' root ranks; rootHosts the root's arena hierarchy hosts).
func splitHostIDs(rootHosts [][]int, rootRanks []int) []string {
	ids := make([]string, len(rootRanks))
	for i, r := range rootRanks {
		for h, host := range rootHosts {
			if slices.Contains(host, r) {
				ids[i] = fmt.Sprint(h)
			}
		}
	}
	return ids
}

// splitTopology is the root topology rt cut down to the split's ranks:
// its graph's links among them where rt has a graph (measured or loaded
// links stay measured), its hosts (ids, splitHostIDs) with nominal links
// otherwise, and a
// model with rt's parameters (the root's measured copy and reduce speeds).
func splitTopology(rt *topology, rootRanks []int, ids []string, cfg Config) (*topology, error) {
	n := len(rootRanks)
	params := rt.model.Params()
	params.NUMALevel = false // the NUMA level is the root's alone
	t := &topology{source: rt.source, log: rt.log}
	var err error
	if rt.graph != nil && n <= topo.ExactRingMaxRanks {
		t.graph = subGraph(rt.graph, rootRanks)
		t.model, err = topo.NewCostModel(t.graph, params)
	} else {
		t.model, err = hostModel(ids, params)
	}
	if err != nil {
		return nil, err
	}
	if t.compressed, err = compressedModel(t.model, cfg.Compression, params.CodecBandwidth); err != nil {
		return nil, err
	}
	t.groups = t.model.Groups()
	if t.model.ArenaHier() {
		t.hosts = &hier.Layout{}
		for _, g := range t.groups {
			t.hosts.Hosts = append(t.hosts.Hosts, slices.Sorted(slices.Values(g))) // the arena's order
		}
	}
	t.ring = t.model.Ring()
	return t, nil
}

// subGraph is g's ranks rootRanks, in that order, with their links.
func subGraph(g *topo.Graph, rootRanks []int) *topo.Graph {
	s := topo.NewGraph(len(rootRanks))
	for i, r := range rootRanks {
		s.SetRank(i, g.Rank(r))
		for j, q := range rootRanks[:i] {
			s.SetLink(j, i, g.Link(q, r))
		}
	}
	return s
}

// rootRanksOf is the root ranks of the split ranks ranks.
func rootRanksOf(rootRanks, ranks []int) []int {
	out := make([]int, len(ranks))
	for i, r := range ranks {
		out[i] = rootRanks[r]
	}
	return out
}
