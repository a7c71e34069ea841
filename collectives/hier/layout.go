package hier

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport"
)

// Layout is how a communicator's ranks sit on hosts: Hosts[h] lists host
// h's ranks in increasing order (their order is the arena's local index),
// and inter-host phases visit the hosts in the order listed. Every rank
// must hold the same Layout. A "host" is whatever group of ranks shares an
// arena: a host, or one NUMA node of a host (pgbackend's NUMA level), whose
// exchange with the other groups of its host then travels over the
// endpoint's shared-memory route.
type Layout struct {
	Hosts [][]int
}

// Comm is one rank's side of the hierarchical collectives of a
// communicator: its place in the Layout, its host's arena and the
// communicator's links. Operations run one at a time per Comm, as the
// arena requires (a communicator keeps a Comm per stream).
type Comm struct {
	ep      transport.Endpoint
	inHost  Host // the collectives of this rank's host; nil when it is alone there
	hosts   [][]int
	hostOf  []int // host of every rank
	localOf []int // local index of every rank on its host
	host    int   // this rank's host
	local   int   // this rank's local index

	// Direct exchanges (AllGather, ReduceScatter): blocks[i] are the
	// ranks whose blocks local index i of this host holds after the
	// exchange, in rank order (partner); packedAt[r] is where rank r's
	// block sits when the host's blocks are laid out local index after
	// local index (the arena phase's layout).
	blocks   [][]int
	packedAt []int

	// segSpace is the tag space of the all_reduce's first segment
	// (segmentSpaces).
	segSpace int

	last Times // of the last collective (LastTimes)
}

// New checks that layout places every rank of ep exactly once and that
// host runs this rank's host (nil only for a host of one rank: ArenaHost
// of a nil arena is nil).
func New(ep transport.Endpoint, host Host, layout Layout) (*Comm, error) {
	if ep == nil {
		return nil, args.Invalidf("nil endpoint")
	}
	p, me := ep.Size(), ep.Rank()
	c := &Comm{ep: ep, inHost: host, hostOf: make([]int, p), localOf: make([]int, p), host: -1}
	for i := range c.hostOf {
		c.hostOf[i] = -1
	}
	segSpace, maxSegments := segmentSpaces(ep)
	c.segSpace = segSpace
	if len(layout.Hosts) > maxSegments {
		return nil, args.Invalidf("layout of %d hosts: at most %d", len(layout.Hosts), maxSegments)
	}
	for h, ranks := range layout.Hosts {
		if len(ranks) == 0 || !slices.IsSorted(ranks) {
			return nil, args.Invalidf("layout host %d: ranks %v must be non-empty and increasing", h, ranks)
		}
		for i, r := range ranks {
			if r < 0 || r >= p || c.hostOf[r] >= 0 {
				return nil, args.Invalidf("layout host %d: rank %d out of range [0, %d) or on two hosts", h, r, p)
			}
			c.hostOf[r], c.localOf[r] = h, i
		}
		c.hosts = append(c.hosts, slices.Clone(ranks))
	}
	for r, h := range c.hostOf {
		if h < 0 {
			return nil, args.Invalidf("layout places no host for rank %d", r)
		}
	}
	c.host, c.local = c.hostOf[me], c.localOf[me]
	mine := c.hosts[c.host]
	switch {
	case len(mine) > 1 && host == nil:
		return nil, args.Invalidf("rank %d shares its host with ranks %v but has no host collectives", me, mine)
	case host != nil && !slices.Equal(host.Ranks(), mine):
		return nil, args.Invalidf("host collectives of ranks %v, but this rank's host has ranks %v", host.Ranks(), mine)
	}
	c.blocks = c.contributions(c.host)
	c.packedAt = make([]int, p)
	at := 0
	for _, ranks := range c.blocks {
		for _, r := range ranks {
			c.packedAt[r] = at
			at++
		}
	}
	if n := maxSegmentCount(c.hosts); n > maxSegments {
		return nil, args.Invalidf("hosts of %d sizes split a buffer into up to %d pieces across hosts: at most %d", len(c.hosts), n, maxSegments)
	}
	return c, nil
}

// Rank is this rank in the communicator.
func (c *Comm) Rank() int { return c.ep.Rank() }

// Size is the number of ranks in the communicator.
func (c *Comm) Size() int { return c.ep.Size() }

// Hosts is the number of hosts.
func (c *Comm) Hosts() int { return len(c.hosts) }

// localSize is the number of ranks on this rank's host.
func (c *Comm) localSize() int { return len(c.hosts[c.host]) }

// leaders are the ranks that stand for their hosts in a rooted
// collective: root on its own host, elsewhere the rank whose local index
// is root's modulo the host's size (so that different roots spread the
// work), in host order. rootAt is root's position in the list.
func (c *Comm) leaders(root int) (ranks []int, rootAt int) {
	ranks = make([]int, len(c.hosts))
	for h, hr := range c.hosts {
		ranks[h] = hr[c.localOf[root]%len(hr)]
	}
	return ranks, c.hostOf[root]
}

// beginAway marks this rank as busy across hosts on its host
// (Host.BeginAway) for an inter-host phase; endAway ends the mark with the
// phase's error. A phase that failed keeps the mark: wrapOp fails the host
// next, and a host peer whose own deadline passes in between waits for
// that failure, which names the rank of the other host that this one
// waited for.
func (c *Comm) beginAway() {
	if c.inHost != nil {
		c.inHost.BeginAway()
	}
}

func (c *Comm) endAway(err error) {
	if c.inHost != nil && err == nil {
		c.inHost.EndAway()
	}
}

// wrapOp adds the collective's name and the caller's rank to err. An op
// that failed past its argument checks may leave host peers waiting for
// this rank's next phase (when it failed across hosts): the host is failed
// with the error (Host.Fail), which stops their arena waits with it.
func (c *Comm) wrapOp(name string, err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("hier %s rank %d: %w", name, c.Rank(), err)
	if c.inHost != nil && !errors.Is(err, args.ErrInvalidArgument) {
		c.inHost.Fail(err)
	}
	return err
}
