package pgbackend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hccl-go/hccl-go/transport/arena"
)

// A split whose members all share this host runs its collectives in
// shared memory as its root does, on its default stream: an arena among its
// members, with a data area of splitDataBytes. Making an arena costs
// mostly the allocation of its data area (tmpfs pages, reserved up front so
// that a full /dev/shm fails the set-up, not a later op): about 4.5 ms for
// the root's 8 MiB and 1.1 ms for 2 MiB at 2 ranks here, and a group's
// creation should cost about what gloo's does. The smaller area caps the
// pipeline's slices (collectives/intra clamps them to it). Its other
// streams carry messages.
//
// Its segments are named after the root's, the split's tag space and its
// members: splits that share a link never share a space (split_agree.go),
// but disjoint ones may, and their segments must not meet. It keeps no
// file descriptor: a member's liveness is the root arena's (the lock each
// root member holds on its own segment), so an extra group costs mappings
// and no descriptor. A split that spans hosts has no arena: the
// hierarchical algorithms need a topology of their own, which splits do
// not discover; its ranks of a host talk over the root's shared-memory
// rings.

// splitDataBytes is the data area of a split's arena (see above).
const splitDataBytes = 2 << 20

// connectSplitArenas gives the split c of root its arena when root has
// arenas and every member of c shares this rank's host.
func (c *Communicator) connectSplitArenas(ctx context.Context, root *Communicator) error {
	ra := root.arenas[0]
	if ra == nil || !c.cfg.ShmCollectives || c.size < 2 {
		return nil
	}
	rootLocal := ra.Ranks()
	rootIndex := make([]int, c.size) // split rank -> local index in the root's arenas
	for i, r := range c.split.rootRanks {
		j, ok := slices.BinarySearch(rootLocal, r)
		if !ok {
			return nil // a member on another host
		}
		rootIndex[i] = j
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.splitTimeout())
	defer cancel()
	members := make([]int, c.size)
	for i := range members {
		members[i] = i
	}
	name := fmt.Sprintf("%s-x%d-%v", root.shmJob, c.split.space, c.split.rootRanks)
	a, err := subArena(ctx, ra, c.rank, members, rootIndex, name, splitDataBytes)
	if err != nil {
		return fmt.Errorf("shared-memory arena of the split's ranks: %w", err)
	}
	c.arenas[StreamDefault] = a
	c.singleCopy[StreamDefault], c.singleCopyGather[StreamDefault] = singleCopies(c.cfg.SingleCopy)
	for r, k := range c.transports {
		if k != "self" && !strings.HasSuffix(k, "+arena") {
			c.transports[r] = k + "+arena"
		}
	}
	return nil
}

// subArena connects an arena among some of host's ranks (a split's, or a
// NUMA group's): rank and members are numbered as the new arena's ranks,
// hostIndex[j] is member j's local index in host, whose liveness the new
// arena reads, so that it holds no file descriptor.
func subArena(ctx context.Context, host *arena.Arena, rank int, members, hostIndex []int, name string, dataBytes int) (*arena.Arena, error) {
	return arena.Connect(ctx, rank, members, name, arena.Config{
		DataBytes: dataBytes,
		Liveness:  func(j int) (bool, error) { return host.Alive(hostIndex[j]) },
	})
}
