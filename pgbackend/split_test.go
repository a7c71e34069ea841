package pgbackend

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// splitAll splits every rank in members (parent ranks, in the split's
// order) of parents and returns the splits by parent rank (nil for
// non-members).
func splitAll(t *testing.T, parents []*Communicator, name string, members []int, cfg Config) []*Communicator {
	t.Helper()
	out := make([]*Communicator, len(parents))
	errs := make([]error, len(parents))
	eachRank(parents, func(p *Communicator) {
		for _, m := range members {
			if m == p.Rank() {
				out[m], errs[m] = p.Split(context.Background(), name, members, cfg)
			}
		}
	})
	for _, m := range members {
		require.NoError(t, errs[m], "parent rank %d", m)
	}
	t.Cleanup(func() {
		for _, c := range out {
			if c != nil {
				_ = c.Destroy()
			}
		}
	})
	return out
}

// members returns the non-nil communicators of cs.
func members(cs []*Communicator) []*Communicator {
	var out []*Communicator
	for _, c := range cs {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// allReduceRanks all-reduces (rank+1) on every communicator of cs (one per
// rank of one group) and checks the sum.
func allReduceRanks(t *testing.T, cs []*Communicator) {
	t.Helper()
	n := len(cs)
	want := float32(n * (n + 1) / 2)
	eachRank(cs, func(c *Communicator) {
		buf := f32(float32(c.Rank()+1), 1)
		w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
		wait(t, w, err)
		assert.Equal(t, f32(want, float32(n)), buf, "rank %d of %d", c.Rank(), n)
	})
}

// TestSplitCollectives: splits over in-process links and over real TCP
// and shared-memory links (connectAll) renumber their members in the
// order given, run their collectives apart from the parent's and from
// each other's (also while all of them run at once), and report what they
// are in Info.
func TestSplitCollectives(t *testing.T) {
	cases := []struct {
		name    string
		parents func(t *testing.T) []*Communicator
	}{
		{"inproc", func(t *testing.T) []*Communicator { return newComms(t, 4, testConfig()) }},
		{"shm", func(t *testing.T) []*Communicator {
			return connectAll(t, []string{"h", "h", "h", "h"}, testConfig())
		}},
		{"tcp and shm", func(t *testing.T) []*Communicator {
			return connectAll(t, []string{"a", "a", "b", "b"}, testConfig())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parents := tc.parents(t)
			odd := splitAll(t, parents, "odd", []int{3, 1}, testConfig())
			even := splitAll(t, parents, "even", []int{0, 2}, testConfig())
			all := splitAll(t, parents, "all", []int{2, 0, 3, 1}, testConfig())
			assert.Equal(t, 0, odd[3].Rank(), "ranks follow the order given")
			assert.Equal(t, 1, odd[1].Rank())
			assert.Equal(t, 2, all[3].Rank())

			spaces := map[int]bool{}
			for _, c := range append(members(odd), members(all)...) {
				info := c.Info()
				require.NotNil(t, info.Split)
				spaces[info.Split.TagSpace] = true
			}
			assert.Len(t, spaces, 2, "splits that share ranks take different tag spaces")
			assert.Nil(t, parents[0].Info().Split)

			// Every group at once, on every rank: the parent too.
			done := make(chan struct{}, 4)
			for _, g := range [][]*Communicator{parents, members(odd), members(even), members(all)} {
				go func() { allReduceRanks(t, g); done <- struct{}{} }()
			}
			for range 4 {
				<-done
			}
			assert.EqualValues(t, 1, odd[1].SequenceNumber(), "a split counts its own ops")
		})
	}
}

// TestSplitOfSplit: a split of a split is a view of the root's links,
// numbered through both.
func TestSplitOfSplit(t *testing.T) {
	parents := newComms(t, 4, testConfig())
	mid := splitAll(t, parents, "mid", []int{3, 2, 1}, testConfig()) // mid ranks: 3->0, 2->1, 1->2
	inMid := []*Communicator{mid[3], mid[2], mid[1]}
	inner := splitAll(t, inMid, "inner", []int{2, 0}, testConfig()) // parent ranks 1, 3
	require.NotNil(t, inner[2])
	require.NotNil(t, inner[0])
	assert.Equal(t, []int{1, 3}, inner[2].Info().Split.ParentRanks)
	allReduceRanks(t, []*Communicator{inner[2], inner[0]})
	allReduceRanks(t, inMid)
}

// TestSplitBadInput: members that disagree on the member list fail at once
// on every rank that sees the other's list, a member that never joins
// fails the others after the shorter of the op and connect timeouts,
// naming it, and bad ranks
// are refused before anything is sent; the parent stays usable.
func TestSplitBadInput(t *testing.T) {
	parents := newComms(t, 3, testConfig())
	cfg := testConfig()
	cfg.ConnectTimeout = 300 * time.Millisecond

	t.Run("different member lists", func(t *testing.T) {
		lists := [][]int{{0, 1}, {0, 1, 2}, {0, 2, 1}}
		errs := make([]error, 3)
		start := time.Now()
		eachRank(parents, func(p *Communicator) {
			c, err := p.Split(context.Background(), "g", lists[p.Rank()], cfg)
			errs[p.Rank()] = err
			if c != nil {
				_ = c.Destroy()
			}
		})
		assert.Less(t, time.Since(start), 5*time.Second, "a disagreement fails without waiting for the timeout")
		for r, err := range errs {
			require.ErrorIs(t, err, ErrInvalidArgument, "rank %d", r)
			assert.ErrorContains(t, err, "same ranks, in the same order", "rank %d", r)
		}
	})
	t.Run("member missing", func(t *testing.T) {
		errs := make([]error, 2)
		eachRank(parents[:2], func(p *Communicator) {
			_, errs[p.Rank()] = p.Split(context.Background(), "missing", []int{1, 0, 2}, cfg)
		})
		for r, err := range errs {
			require.ErrorIs(t, err, ErrTimeout, "rank %d", r)
			assert.ErrorContains(t, err, "parent ranks [2] did not join", "rank %d", r)
		}
	})
	t.Run("member missing, op timeout shorter", func(t *testing.T) {
		short := cfg
		short.ConnectTimeout, short.Timeout = time.Minute, 300*time.Millisecond
		errs := make([]error, 2)
		start := time.Now()
		eachRank(parents[:2], func(p *Communicator) {
			_, errs[p.Rank()] = p.Split(context.Background(), "missing-op", []int{1, 0, 2}, short)
		})
		assert.Less(t, time.Since(start), 20*time.Second, "the op timeout bounds the agreement")
		for r, err := range errs {
			require.ErrorIs(t, err, ErrTimeout, "rank %d", r)
			assert.ErrorContains(t, err, "parent ranks [2] did not join", "rank %d", r)
		}
	})
	t.Run("bad ranks", func(t *testing.T) {
		for _, ranks := range [][]int{{0, 3}, {0, 0}, {1, 2}, {}} {
			_, err := parents[0].Split(context.Background(), "bad", ranks, cfg)
			require.ErrorIs(t, err, ErrInvalidArgument, "%v", ranks)
		}
	})
	// Rank 2 meets the offers the failed splits left behind (of other
	// names and lists) and skips them.
	allReduceRanks(t, parents)
	g := splitAll(t, parents, "after", []int{2, 0, 1}, testConfig())
	allReduceRanks(t, members(g))
	// Ranks 0 and 1 tried [1 0 2] without rank 2: a split of those ranks
	// now fails on rank 2 and on the ranks it meets, saying why.
	errs := make([]error, 3)
	eachRank(parents, func(p *Communicator) {
		_, errs[p.Rank()] = p.Split(context.Background(), "again", []int{1, 0, 2}, cfg)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrInvalidArgument, "rank %d", r)
		assert.ErrorContains(t, err, "in the same order", "rank %d", r)
	}
}

// TestSplitParentDestroyed: destroying the root fails its live splits'
// pending and later ops with ErrParentDestroyed on every rank, without
// waiting for their timeout; destroying them afterwards succeeds.
func TestSplitParentDestroyed(t *testing.T) {
	eps := newComms(t, 2, testConfig())
	cfg := testConfig()
	cfg.Timeout = time.Minute
	kids := members(splitAll(t, eps, "kid", []int{0, 1}, cfg))
	allReduceRanks(t, kids)

	// A pending op: rank 1 never joins it.
	buf := f32(1)
	pending, err := kids[0].AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
	require.NoError(t, err)
	start := time.Now()
	eachRank(eps, func(p *Communicator) { require.NoError(t, p.Destroy()) })
	err = pending.Wait(context.Background(), 10*time.Second)
	require.ErrorIs(t, err, ErrParentDestroyed)
	assert.Less(t, time.Since(start), 5*time.Second)
	for _, k := range kids {
		w, err := k.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
		if err == nil {
			err = w.Wait(context.Background(), 10*time.Second)
		}
		require.ErrorIs(t, err, ErrParentDestroyed, "rank %d", k.Rank())
		assert.Equal(t, ClassInvalidUsage, Classify(err))
		_, err = k.Split(context.Background(), "grandkid", []int{0, 1}, cfg)
		require.ErrorIs(t, err, ErrParentDestroyed)
		require.NoError(t, k.Destroy())
	}
}

// TestSplitSpaces: the lowest space no member ever used, then one no
// member uses now; destroyed splits free theirs.
func TestSplitSpaces(t *testing.T) {
	offer := func(live, ever []int) splitOffer {
		var o splitOffer
		for _, s := range live {
			setSpace(&o.live, s)
		}
		for _, s := range ever {
			setSpace(&o.ever, s)
		}
		return o
	}
	all := make([]int, 0, numSplitSpaces)
	for s := minSplitSpace; s <= maxSplitSpace; s++ {
		all = append(all, s)
	}
	cases := []struct {
		name   string
		offers []splitOffer
		want   int
		err    bool
	}{
		{"fresh", []splitOffer{offer(nil, nil), offer(nil, nil)}, minSplitSpace, false},
		{"past any member's", []splitOffer{offer([]int{512}, []int{512, 513}), offer(nil, []int{514})}, 515, false},
		{"reuse once all were used", []splitOffer{offer([]int{512}, all), offer([]int{513}, all)}, 514, false},
		{"none free", []splitOffer{offer(all, all)}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseSpace(tc.offers)
			if tc.err {
				require.ErrorIs(t, err, ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	parents := newComms(t, 2, testConfig())
	for i := range 3 {
		g := members(splitAll(t, parents, fmt.Sprintf("g%d", i), []int{0, 1}, testConfig()))
		assert.Equal(t, minSplitSpace+i, g[0].Info().Split.TagSpace)
		assert.Equal(t, 1, parents[0].Splits())
		eachRank(g, func(c *Communicator) { require.NoError(t, c.Destroy()) })
		assert.Equal(t, 0, parents[0].Splits())
	}
}

// TestSplitRootFailure: an abort of the root fails its splits with the
// same cause.
func TestSplitRootFailure(t *testing.T) {
	parents := newComms(t, 2, testConfig())
	kids := members(splitAll(t, parents, "kid", []int{0, 1}, testConfig()))
	parents[0].Abort()
	buf := f32(1)
	w, err := kids[0].AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
	if err == nil {
		err = w.Wait(context.Background(), 10*time.Second)
	}
	require.ErrorIs(t, err, ErrAborted)
}

// TestSplitNamesMayDiffer: members that name the same split differently (a
// group name counts every group a rank made, so torch's names drift apart
// after a split_group of some ranks) still agree on it: same ranks, same
// number of splits of those ranks before.
func TestSplitNamesMayDiffer(t *testing.T) {
	parents := newComms(t, 3, testConfig())
	kids := make([]*Communicator, 3)
	eachRank(parents, func(p *Communicator) {
		var err error
		kids[p.Rank()], err = p.Split(context.Background(), fmt.Sprintf("name-%d", p.Rank()), []int{0, 1, 2}, testConfig())
		require.NoError(t, err)
	})
	t.Cleanup(func() {
		for _, k := range kids {
			_ = k.Destroy()
		}
	})
	allReduceRanks(t, kids)
}

// TestSplitArenas: a split whose members share one host runs its
// collectives in shared memory and holds no file descriptor of its own; a
// split across hosts runs no whole op in an arena (split_hier_test.go has
// its hierarchy).
func TestSplitArenas(t *testing.T) {
	oneHost := connectAll(t, []string{"h", "h", "h", "h"}, testConfig())
	fds := openFDs(t)
	odd := splitAll(t, oneHost, "odd", []int{3, 1}, testConfig())
	all := splitAll(t, oneHost, "all", []int{2, 0, 3, 1}, testConfig())
	assert.Equal(t, fds, openFDs(t), "splits with arenas hold no file descriptors")
	for _, g := range [][]*Communicator{members(odd), members(all)} {
		for _, c := range g {
			for r, kind := range c.Info().Transports {
				if r != c.Rank() {
					assert.Equal(t, "shm+arena", kind, "rank %d to %d", c.Rank(), r)
				}
			}
			assert.NotNil(t, c.arenaFor(0, c.options("allreduce", 1)), "rank %d: all_reduce in the arena", c.Rank())
		}
		allReduceRanks(t, g)
	}

	twoHosts := connectAll(t, []string{"a", "a", "b", "b"}, testConfig())
	across := splitAll(t, twoHosts, "across", []int{0, 1, 2}, testConfig())
	for _, c := range members(across) {
		assert.Nil(t, c.arenaFor(0, c.options("allreduce", 1)), "rank %d: no whole op in an arena across hosts", c.Rank())
	}
	allReduceRanks(t, members(across))
}

// TestSplitArenaPeerGone: a split's arena learns that a member is gone
// from the root's arenas: a wait for a member whose root arena closed fails.
func TestSplitArenaPeerGone(t *testing.T) {
	parents := connectAll(t, []string{"h", "h"}, testConfig())
	g := splitAll(t, parents, "pair", []int{0, 1}, testConfig())
	a := g[0].arenas[0]
	require.NotNil(t, a)
	alive, err := a.Alive(1)
	require.NoError(t, err)
	assert.True(t, alive)
	require.NoError(t, parents[1].arenas[0].Close()) // rank 1's root arena goes away
	require.Eventually(t, func() bool {
		alive, err := a.Alive(1)
		return err == nil && !alive
	}, 5*time.Second, time.Millisecond, "the split still sees rank 1 alive")
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestDisjointSplitsArenas: two splits with no rank in common may take
// the same tag space; their arenas must still be apart.
func TestDisjointSplitsArenas(t *testing.T) {
	parents := connectAll(t, []string{"h", "h", "h", "h"}, testConfig())
	done := make(chan []*Communicator, 2)
	for _, m := range [][]int{{0, 1}, {2, 3}} {
		go func() { done <- splitAll(t, parents, fmt.Sprint(m), m, testConfig()) }()
	}
	a, b := <-done, <-done
	for _, g := range [][]*Communicator{members(a), members(b)} {
		require.NotNil(t, g[0].arenas[0])
		allReduceRanks(t, g)
	}
}
