// Package streams_test drives pgbackend communicators with many async
// collectives and point-to-point ops on several streams: no deadlock, no
// lost completion, every result checked.
package streams_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport/inproc"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

const (
	ranks      = 4
	numStreams = 3
	opTimeout  = 20 * time.Second
	window     = 256 // ops in flight per rank before the oldest is waited for
)

func config() pgbackend.Config {
	cfg := pgbackend.DefaultConfig()
	cfg.Streams = numStreams
	cfg.Timeout = opTimeout
	cfg.TopoProbe = "0"
	return cfg
}

func inprocComms(t *testing.T, cfg pgbackend.Config) []*pgbackend.Communicator {
	t.Helper()
	cs := make([]*pgbackend.Communicator, ranks)
	for i, ep := range inproc.NewGroup(ranks) {
		cs[i] = pgbackend.New(ep, cfg, nil)
	}
	t.Cleanup(func() { destroyAll(t, cs) })
	return cs
}

// connectedComms runs the real init over loopback TCP; hosts[r] is rank r's
// host identity (all equal: shared memory and per-stream arenas).
func connectedComms(t *testing.T, cfg pgbackend.Config, hosts []string) []*pgbackend.Communicator {
	t.Helper()
	ls := make([]*tcp.Listener, ranks)
	addrs := make([]string, ranks)
	for r := range ls {
		l, err := pgbackend.Listen(cfg)
		require.NoError(t, err)
		ls[r], addrs[r] = l, l.Addr()
	}
	cs := make([]*pgbackend.Communicator, ranks)
	errs := make([]error, ranks)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rv := pgbackend.Rendezvous{Rank: r, Addrs: addrs, HostIDs: hosts, Secret: []byte("stress " + t.Name())}
			cs[r], errs[r] = pgbackend.Connect(context.Background(), ls[r], rv, cfg)
		}()
	}
	wg.Wait()
	t.Cleanup(func() { destroyAll(t, cs) })
	for _, err := range errs {
		require.NoError(t, err)
	}
	return cs
}

func destroyAll(t *testing.T, cs []*pgbackend.Communicator) {
	for _, c := range cs {
		if c != nil {
			if err := c.Destroy(); err != nil {
				t.Errorf("destroy: %v", err)
			}
		}
	}
}

func TestStressInproc(t *testing.T) {
	n := 10000 // the required count; the race detector makes it ~10x slower
	if raceEnabled || testing.Short() {
		n = 500
	}
	runStress(t, inprocComms(t, config()), makePlan(1, n, ranks, numStreams))
}

func TestStressInprocOneWorker(t *testing.T) {
	// A budget of one op at a time: ranks may start ops of different
	// streams in different orders; the deferral limit keeps that from
	// deadlocking.
	cfg := config()
	cfg.StreamWorkers, cfg.StreamDefer = 1, time.Millisecond
	n := 3000
	if raceEnabled || testing.Short() {
		n = 300
	}
	runStress(t, inprocComms(t, cfg), makePlan(2, n, ranks, numStreams))
}

func TestStressConnected(t *testing.T) {
	n := 2000
	if raceEnabled || testing.Short() {
		n = 200
	}
	for _, tc := range []struct {
		name  string
		hosts []string
	}{
		{"tcp", []string{"h0", "h1", "h2", "h3"}},
		{"shm arenas", []string{"h", "h", "h", "h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runStress(t, connectedComms(t, config(), tc.hosts), makePlan(3, n, ranks, numStreams))
		})
	}
}

// runStress runs plan on every rank at once and checks every result and
// every completion.
func runStress(t *testing.T, cs []*pgbackend.Communicator, plan []planOp) {
	t.Helper()
	start := time.Now()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = runRank(c, plan)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	t.Logf("%d ops on %d streams, %d ranks: %v", len(plan), numStreams, len(cs), time.Since(start))
}

type pending struct {
	op    planOp
	w     *streams.Work
	out   []byte
	check bool
}

func runRank(c *pgbackend.Communicator, plan []planOp) error {
	q, size := c.Rank(), c.Size()
	rng := rand.New(rand.NewPCG(uint64(q), 99)) // rank-local event placement
	var issued, completed atomic.Int64
	var inflight []pending
	waitOldest := func() error {
		p := inflight[0]
		inflight = inflight[1:]
		if err := p.w.Wait(context.Background(), opTimeout); err != nil {
			return fmt.Errorf("op %d %s on stream %d: %w", p.op.index, p.op.kind, p.op.stream, err)
		}
		if p.check {
			if want, got := expected(p.op, q, size), decode(p.out); !slices.Equal(want, got) {
				return fmt.Errorf("op %d %s (n=%d, root %d) on stream %d: wrong result", p.op.index, p.op.kind, p.op.n, p.op.root, p.op.stream)
			}
		}
		return nil
	}
	for _, op := range plan {
		if rng.IntN(40) == 0 {
			// A rank-local event: later ops of one stream wait for the ops
			// issued so far on another. Events point back in issue order,
			// which every rank shares, so they cannot form a cycle.
			from, to := rng.IntN(numStreams), rng.IntN(numStreams)
			ev, err := c.Record(from)
			if err != nil {
				return err
			}
			if _, err := c.WaitFor(to, ev); err != nil {
				return err
			}
		}
		p, err := issue(c, op)
		if err != nil {
			return fmt.Errorf("issue op %d %s: %w", op.index, op.kind, err)
		}
		if p.w == nil {
			continue // a point-to-point op this rank is not part of
		}
		issued.Add(1)
		p.w.OnComplete(func(error) { completed.Add(1) })
		inflight = append(inflight, p)
		if len(inflight) >= window {
			if err := waitOldest(); err != nil {
				return err
			}
		}
	}
	for len(inflight) > 0 {
		if err := waitOldest(); err != nil {
			return err
		}
	}
	// Callbacks run just after a Work's waiters wake: poll (every
	// millisecond) until the last ones have run.
	for deadline := time.Now().Add(5 * time.Second); completed.Load() != issued.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d ops issued, %d completion callbacks", issued.Load(), completed.Load())
		}
	}
	return nil
}

// issue starts op on this rank.
func issue(c *pgbackend.Communicator, op planOp) (pending, error) {
	q, size, i, n, s := c.Rank(), c.Size(), op.index, op.n, op.stream
	p := pending{op: op, check: true}
	var err error
	switch op.kind {
	case allReduce:
		p.out = input(i, q, n)
		p.w, err = c.AllReduce(p.out, p.out, reduce.Int32, reduce.Sum, 0, s)
	case allGather:
		p.out = make([]byte, 4*n*size)
		p.w, err = c.AllGather(input(i, q, n), p.out, s)
	case broadcast:
		p.out = make([]byte, 4*n)
		send := p.out
		if q == op.root {
			send = input(i, q, n)
		}
		p.w, err = c.Broadcast(send, p.out, op.root, s)
	case reduceScatter:
		p.out = make([]byte, 4*n)
		p.w, err = c.ReduceScatter(input(i, q, n*size), p.out, reduce.Int32, reduce.Sum, 0, s)
	case allToAll:
		counts, displs := make([]int, size), make([]int, size)
		for r := range size {
			counts[r], displs[r] = 4*n, 4*n*r
		}
		p.out = make([]byte, 4*n*size)
		p.w, err = c.AllToAllV(input(i, q, n*size), counts, displs, p.out, counts, displs, s)
	case reduceMax:
		if q == op.root {
			p.out = make([]byte, 4*n)
		}
		p.w, err = c.Reduce(input(i, q, n), p.out, reduce.Int32, reduce.Max, 0, op.root, s)
		p.check = q == op.root
	case barrier:
		p.w, err = c.Barrier(s)
		p.check = false
	case sendRecv:
		switch q {
		case op.root:
			p.w, err = c.Send(input(i, q, n), op.dst, uint32(i))
			p.check = false
		case op.dst:
			p.out = make([]byte, 4*n)
			p.w, err = c.Recv(p.out, op.root, uint32(i))
		}
	}
	return p, err
}
