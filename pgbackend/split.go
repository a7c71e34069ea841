package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport/sub"
)

// Splits. A communicator split from another (Split, as ncclCommSplit) is
// a view of some of its ranks (transport/sub) over the links of the
// communicator that connected them, its root: no connection, socket,
// monitor or thread of its own, only its streams' goroutines and a tag
// space that keeps its messages apart from the root's and from every other
// split sharing a link (split_agree.go). A split of a split is a view of
// the root too.
//
// Lifetime: a split lives as long as its root. Destroying the root fails
// every split of it still alive, at once: their pending ops and every
// later op fail with ErrParentDestroyed, and destroying them afterwards
// succeeds. A failure or abort of the root (a peer died, say) fails its
// splits with the same cause. A split's own failure (an op that timed
// out) stays in the split. Destroying a split that others were split from
// leaves those alone: they hang on the root.
//
// Splits run their collectives as messages over the root's links
// (shared-memory rings between ranks of a host, TCP across), choosing the
// algorithm by size, except a split whose members all share a host: it
// gets an arena of its own on its default stream (split_arena.go). Splits
// have no topology of their own.

// ErrParentDestroyed fails the ops of a split whose root was destroyed.
var ErrParentDestroyed = errors.New("the communicator it was split from was destroyed")

// splitState is a communicator's place in a family of splits.
type splitState struct {
	// root owns the links; nil when this communicator connected them.
	root *Communicator
	// rootRanks are this communicator's ranks as the root's (a split's).
	rootRanks []int
	space     int // a split's tag space
	// family is the root's registry, shared by its splits.
	family *splitFamily
}

// splitFamily is the registry of a root's live splits on this rank.
type splitFamily struct {
	// agree lets one split agreement run at a time: agreements share
	// their tag (split_agree.go).
	agree sync.Mutex

	mu     sync.Mutex
	live   map[int]*Communicator // by tag space
	ever   map[int]bool          // spaces used since the root was made
	closed bool                  // the root was destroyed
	// attempts counts the agreements begun per member list (its digest).
	attempts map[[32]byte]uint32
}

func newSplitFamily() *splitFamily {
	return &splitFamily{live: map[int]*Communicator{}, ever: map[int]bool{}, attempts: map[[32]byte]uint32{}}
}

// SplitInfo describes a split communicator (Info.Split).
type SplitInfo struct {
	TagSpace    int   `json:"tag_space"`
	ParentRanks []int `json:"parent_ranks"` // per rank: its rank in the communicator that owns the links
}

// Split makes a communicator of some of this one's ranks: ranks lists them
// (this rank included) in the new communicator's rank order, and name
// identifies the split; every member must call Split with the same name
// and ranks, which they check (a clear error on each, the op never runs).
// It returns once every member has agreed, or fails after
// cfg.splitTimeout naming the ranks that did not join. cfg is the new
// communicator's settings; those of the links (transport, TCP streams per
// peer, addresses) are the root's.
func (c *Communicator) Split(ctx context.Context, name string, ranks []int, cfg Config) (*Communicator, error) {
	if err := c.live(); err != nil {
		return nil, fmt.Errorf("split %q: %w", name, err)
	}
	if err := c.checkSplitRanks(ranks); err != nil {
		return nil, fmt.Errorf("split %q rank %d: %w", name, c.rank, err)
	}
	if cfg.GlobalRanks != nil && len(cfg.GlobalRanks) != len(ranks) {
		return nil, fmt.Errorf("split %q rank %d: %w: option global_ranks lists %d ranks for %d", name, c.rank, ErrInvalidArgument, len(cfg.GlobalRanks), len(ranks))
	}
	root, rootRanks := c, slices.Clone(ranks)
	if c.split.root != nil {
		root = c.split.root
		for i, r := range ranks {
			rootRanks[i] = c.split.rootRanks[r]
		}
	}
	if err := root.live(); err != nil {
		return nil, fmt.Errorf("split %q: %w", name, ErrParentDestroyed)
	}
	if cause := root.failure(); cause != nil {
		return nil, fmt.Errorf("split %q: the communicator it splits %w: %w", name, ErrCommFailed, cause)
	}
	fam := root.split.family
	fam.agree.Lock()
	defer fam.agree.Unlock()
	space, err := agreeSpace(ctx, root, rootRanks, name, cfg.splitTimeout())
	if err != nil {
		return nil, fmt.Errorf("split %q rank %d: %w", name, c.rank, err)
	}
	child, err := newSplit(ctx, root, rootRanks, space, cfg)
	if err != nil {
		return nil, fmt.Errorf("split %q rank %d: %w", name, c.rank, err)
	}
	fam.mu.Lock()
	defer fam.mu.Unlock()
	if fam.closed {
		child.cancel(ErrParentDestroyed)
		return nil, fmt.Errorf("split %q: %w", name, ErrParentDestroyed)
	}
	fam.live[space], fam.ever[space] = child, true
	return child, nil
}

// splitTimeout bounds each step of making a split: the op timeout when it
// is the shorter, else the connect timeout. A split connects nothing new
// (it runs over the root's links), so a member that never joins is as
// late as a rank that never calls a collective.
func (cfg Config) splitTimeout() time.Duration {
	if cfg.Timeout > 0 && cfg.Timeout < cfg.ConnectTimeout {
		return cfg.Timeout
	}
	return cfg.ConnectTimeout
}

// checkSplitRanks: distinct ranks of this communicator, this one included.
func (c *Communicator) checkSplitRanks(ranks []int) error {
	self := false
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		switch {
		case r < 0 || r >= c.size:
			return fmt.Errorf("%w: rank %d out of range [0, %d)", ErrInvalidArgument, r, c.size)
		case seen[r]:
			return fmt.Errorf("%w: rank %d listed twice", ErrInvalidArgument, r)
		}
		seen[r] = true
		self = self || r == c.rank
	}
	if !self {
		return fmt.Errorf("%w: ranks %v do not include this rank %d", ErrInvalidArgument, ranks, c.rank)
	}
	return nil
}

// newSplit builds the split of root's ranks rootRanks in tag space space.
// Its context is a child of the root's: the root's failure is its own.
func newSplit(ctx context.Context, root *Communicator, rootRanks []int, space int, cfg Config) (*Communicator, error) {
	// The split's traffic is counted beneath its view, so that the views
	// of its collectives' phases nest in the view's tag space (transport/sub
	// flattens a view of a view; it cannot see through a wrapper).
	counted, stats := countTraffic(root.links)
	view, err := sub.New(counted, rootRanks, space)
	if err != nil {
		return nil, err
	}
	var kinds, addrs []string
	for _, r := range rootRanks {
		if root.transports != nil {
			// The ranks of a host talk in messages over the shared-memory
			// rings, unless the split gets arenas below.
			kinds = append(kinds, strings.TrimSuffix(root.transports[r], "+arena"))
		}
		if root.addrs != nil {
			addrs = append(addrs, root.addrs[r])
		}
	}
	c := newCommunicator(root.ctx, view, view, stats, cfg, kinds)
	c.addrs = addrs
	c.split = splitState{root: root, rootRanks: rootRanks, space: space, family: root.split.family}
	err = c.connectSplitArenas(ctx, root)
	if err == nil && c.arenas[StreamDefault] == nil {
		err = c.connectSplitHier(ctx, root)
	}
	if err != nil {
		_ = c.Destroy() // its streams, view and any arena made; it was never registered
		return nil, err
	}
	return c, nil
}

// orphanSplits fails every live split of this root (Destroy): their ops
// fail with ErrParentDestroyed from now on.
func (c *Communicator) orphanSplits() {
	if c.split.root != nil {
		return
	}
	fam := c.split.family
	fam.mu.Lock()
	fam.closed = true
	children := make([]*Communicator, 0, len(fam.live))
	for _, ch := range fam.live {
		children = append(children, ch)
	}
	fam.mu.Unlock()
	for _, ch := range children {
		ch.stopLane() // a split with arenas may have a C lane: no op may take it now
		ch.cancel(ErrParentDestroyed)
	}
}

// stopSplitLanes closes the C lanes of this root's live splits (its
// failure): their other ops fail through their contexts, children of the
// root's.
func (c *Communicator) stopSplitLanes() {
	if c.split.root != nil {
		return
	}
	fam := c.split.family
	fam.mu.Lock()
	defer fam.mu.Unlock()
	for _, ch := range fam.live {
		ch.stopLane()
	}
}

// leaveFamily frees a destroyed split's tag space on this rank.
func (c *Communicator) leaveFamily() {
	if c.split.root == nil {
		return
	}
	fam := c.split.family
	fam.mu.Lock()
	if fam.live[c.split.space] == c {
		delete(fam.live, c.split.space)
	}
	fam.mu.Unlock()
}

// splitInfo is Info.Split: nil for a communicator that owns its links.
func (c *Communicator) splitInfo() *SplitInfo {
	if c.split.root == nil {
		return nil
	}
	return &SplitInfo{TagSpace: c.split.space, ParentRanks: slices.Clone(c.split.rootRanks)}
}

// Splits is the number of live splits of this communicator's root on this
// rank (the root's own count for a root).
func (c *Communicator) Splits() int {
	fam := c.split.family
	fam.mu.Lock()
	defer fam.mu.Unlock()
	return len(fam.live)
}
