package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// NUMA nodes as a level of the hierarchy. Where a host's ranks span NUMA
// nodes joined by slower links (topo.NUMASplit.Level), every shared host
// has its arenas, and the cost model predicts the level faster for some
// op (topo/cost_numa.go), the topology gives a second hier.Layout whose
// groups are the (host, NUMA node) groups (topology.numa), and every
// stream gets an arena among this rank's group and a hier.Comm over that
// layout: the
// arena phase inside each group, the exchange between groups over the
// links (shared-memory messages across the NUMA nodes of a host, TCP
// across hosts), every local rank carrying its own shard. The cost model
// chooses it per op and size as algorithm "numa" (topo.AlgoNUMA): on one
// host against the whole op in the host's arena, across hosts against the
// other algorithms. The host's arenas stay: small ops, the fast lane and
// everything the level does not cover run there as before.

// algoNUMA is the NUMA level's algorithm (HCCL_GO_ALGO=numa). Only
// pgbackend runs it (on numaLevel.hiers); the collectives never see it.
const algoNUMA collectives.Algorithm = topo.AlgoNUMA

// numaArenaBytes is the data area of a NUMA group's arena: the host
// arena's default, since the level carries the large ops.
const numaArenaBytes = 8 << 20

// numaLevel is a communicator's side of the NUMA level: per stream, the
// arena of this rank's (host, NUMA node) group (nil when the group is this
// rank alone) and the hierarchical collectives over the groups (nil
// without the level).
type numaLevel struct {
	arenas [numStreams]*arena.Arena
	hiers  [numStreams]*hier.Comm
}

// on reports whether stream has the NUMA level.
func (n *numaLevel) on(stream int) bool {
	return stream >= 0 && stream < numStreams && n.hiers[stream] != nil
}

// connectNUMA gives every stream of c the NUMA level of layout. A group's
// arena takes its members' liveness from the host's arena (subArena, as a
// split's does), so it holds no file descriptor.
func (c *Communicator) connectNUMA(ctx context.Context, layout hier.Layout) error {
	gi := slices.IndexFunc(layout.Hosts, func(g []int) bool { return slices.Contains(g, c.rank) })
	if gi < 0 {
		return fmt.Errorf("NUMA level: rank %d in no group of %v", c.rank, layout.Hosts)
	}
	mine := layout.Hosts[gi]
	for i := range c.streams {
		var a *arena.Arena
		if len(mine) > 1 {
			ha := c.arenas[i]
			if ha == nil {
				return fmt.Errorf("NUMA level: rank %d has no arena with its host's ranks", c.rank)
			}
			hostRanks := ha.Ranks()
			hostIndex := make([]int, len(mine))
			for j, r := range mine {
				k, ok := slices.BinarySearch(hostRanks, r)
				if !ok {
					return fmt.Errorf("NUMA level: group %v has rank %d, not on this rank's host %v", mine, r, hostRanks)
				}
				hostIndex[j] = k
			}
			var err error
			if a, err = subArena(ctx, ha, c.rank, mine, hostIndex, fmt.Sprintf("%s-numa%d-s%d", c.shmJob, gi, i), numaArenaBytes); err != nil {
				return fmt.Errorf("NUMA level: shared-memory arena with ranks %v: %w", mine, err)
			}
			c.numa.arenas[i] = a
		}
		h, err := hier.New(c.ep, hier.ArenaHost(a), layout)
		if err != nil {
			return fmt.Errorf("NUMA level: %w", err)
		}
		c.numa.hiers[i] = h
	}
	return nil
}

// closeArenas closes the NUMA groups' arenas (before the host's, whose
// liveness they read).
func (n *numaLevel) closeArenas() error {
	var err error
	for _, a := range n.arenas {
		if a != nil {
			err = errors.Join(err, a.Close())
		}
	}
	return err
}

// numaFits says whether an op of nbytes may take the NUMA level on stream:
// the level is there, and an all_reduce is larger than the fast lane's
// limit (the lane runs those in the host's arena on whichever rank takes
// it, and a rank that does not take it must run the same arena op).
func (c *Communicator) numaFits(stream int, op string, nbytes int) bool {
	if !c.numa.on(stream) {
		return false
	}
	return op != topo.OpAllReduce || nbytes > c.laneLimit(stream)
}

// dropNUMA turns a NUMA override (HCCL_GO_ALGO=numa) into the automatic
// choice where stream has no NUMA level, with a warning once.
func (c *Communicator) dropNUMA(stream int, op string, o collectives.Options) collectives.Options {
	if o.Algo != algoNUMA || c.numa.on(stream) {
		return o
	}
	if c.topo != nil {
		c.topo.log.once("nonuma/"+op, "%s: HCCL_GO_ALGO=numa but the communicator has no NUMA level (%s): choosing automatically", op, c.topo.numaWhy())
	}
	o.Algo = collectives.Auto
	return o
}

// numaRounds is Options.RoundBytes of an op of nbytes on the NUMA level
// (topo.CostModel.ArenaRounds of the level's model).
func (t *topology) numaRounds(op string, nbytes int) int {
	if t == nil || t.model == nil || t.model.NUMA() == nil {
		return 0
	}
	return t.model.NUMA().ArenaRounds(op, nbytes)
}

// numaWhy says why the topology has or lacks the NUMA level.
func (t *topology) numaWhy() string {
	if t == nil || t.model == nil {
		return "off, because the ranks of this host share one NUMA node (or are bound to none) and nothing was measured or loaded"
	}
	return t.model.NUMALevel()
}
