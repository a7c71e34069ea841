package arena

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Arena is one rank's view of the shared-memory segments of its host.
//
// Operations (Begin ... End) are serialised; their order must be the same on
// every rank, so a communicator with several streams needs one Arena per
// stream (each with its own job ID). Close may be called at any time.
type Arena struct {
	cfg   Config
	geom  geometry
	index int   // this rank's local index
	ranks []int // global rank by local index

	// waited is the time this rank spent waiting for peers past the first
	// polls (Waited).
	waited atomic.Int64

	own  *segment
	segs []*segment // by local index, own included

	// Views of the shared words and buffers, by local index.
	posted  []*atomic.Uint64
	waiters []*atomic.Uint32
	bells   []*atomic.Uint32
	places  []*atomic.Uint64    // where each rank last waited (placement.go)
	fails   []*atomic.Uint64    // each rank's failed word (failure.go)
	aways   []*atomic.Uint64    // each rank's away word (failure.go)
	flags   [2][]*atomic.Uint64 // inline slot flags by parity
	stamps  [2][][]byte         // inline slot stamps by parity
	inline  [2][][]byte         // inline payloads by parity
	halves  [2][][]byte         // data halves by parity

	spin time.Duration // how long a wait spins before it yields
	pl   placement     // keeps this rank off its peers' CPU

	// op serialises operations and guards epoch.
	op    sync.Mutex
	epoch uint64 // last epoch this rank started
	// failed holds why operations are refused (Fail), or nil.
	failed atomic.Pointer[error]

	// life guards the mappings: operations hold it for reading, Close takes
	// it for writing before unmapping.
	life     sync.RWMutex
	closed   atomic.Bool
	closeErr error
	once     sync.Once
}

// Connect joins the arena of the ranks in local: the global ranks of this
// host that form the communicator, sorted, rank included. jobID must be the
// same on all of them and unique per communicator (segment names derive
// from its hash). Connect returns once every peer has mapped this rank's
// segment, which is then unlinked, or fails when ctx ends first.
func Connect(ctx context.Context, rank int, local []int, jobID string, cfg Config) (*Arena, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	index, err := checkLocal(rank, local)
	if err != nil {
		return nil, err
	}
	a := &Arena{
		cfg:   cfg,
		geom:  geometry{inlineBytes: cfg.InlineBytes, dataBytes: cfg.DataBytes},
		index: index,
		ranks: slices.Clone(local),
		segs:  make([]*segment, len(local)),
		spin:  spinBudget(cfg.SpinTime, len(local)),
	}
	if err := a.setup(ctx, jobHash(jobID)); err != nil {
		for _, s := range a.segs {
			if s != nil {
				_ = s.release() // the setup error says more
			}
		}
		return nil, fmt.Errorf("arena rank %d: %w", rank, err)
	}
	a.bindViews()
	return a, nil
}

// oversubscribedSpin is the spin budget when the local ranks outnumber the
// CPUs this process may run on: the peer a rank waits for may then be
// waiting for its CPU, and spinning only delays it.
const oversubscribedSpin = time.Microsecond

// spinBudget is how long waits spin among p local ranks.
func spinBudget(spin time.Duration, p int) time.Duration {
	if p > runtime.NumCPU() {
		return min(spin, oversubscribedSpin)
	}
	return spin
}

// checkLocal validates the rank list and returns rank's index in it.
func checkLocal(rank int, local []int) (int, error) {
	if len(local) == 0 || !slices.IsSorted(local) {
		return 0, fmt.Errorf("arena: local ranks %v must be non-empty and sorted", local)
	}
	if len(slices.Compact(slices.Clone(local))) != len(local) || local[0] < 0 {
		return 0, fmt.Errorf("arena: local ranks %v must be distinct and non-negative", local)
	}
	index, ok := slices.BinarySearch(local, rank)
	if !ok {
		return 0, fmt.Errorf("arena: rank %d not in local ranks %v", rank, local)
	}
	return index, nil
}

// setup creates the own segment, maps every peer's, and unlinks the own
// once all peers have attached (and closes the files under Config.Liveness).
func (a *Arena) setup(ctx context.Context, hash uint64) error {
	p := len(a.ranks)
	want := header{nLocal: p, geom: a.geom, hash: hash, pid: processID()}
	own := want
	own.index = a.index
	var err error
	a.own, err = createSegment(segmentPath(a.cfg.Dir, hash, a.ranks[a.index]), own)
	if err != nil {
		return err
	}
	a.segs[a.index] = a.own
	for j, r := range a.ranks {
		if j == a.index {
			continue
		}
		want.index = j
		path := segmentPath(a.cfg.Dir, hash, r)
		err := retry(ctx, func() error {
			s, err := openSegment(path, want)
			if err == nil {
				a.segs[j] = s
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("map segment of peer rank %d: %w", r, err)
		}
		word64(a.segs[j].mem, hAttach).Add(1)
	}
	attach := word64(a.own.mem, hAttach)
	err = retry(ctx, func() error {
		if attach.Load() < uint64(p-1) {
			return errNotReady
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("wait for %d peers to map this rank's segment (%d did): %w", p-1, attach.Load(), err)
	}
	if err := a.own.unlink(); err != nil {
		return err
	}
	if a.cfg.Liveness != nil { // the files' locks are not needed (Config.Liveness)
		for _, s := range a.segs {
			if err := s.closeFile(); err != nil {
				return err
			}
		}
	}
	return nil
}

// retry calls try until it returns anything but errNotReady, backing off
// from 20µs to 2ms between calls, or until ctx ends.
func retry(ctx context.Context, try func() error) error {
	delay := 20 * time.Microsecond
	for {
		err := try()
		if !errors.Is(err, errNotReady) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Millisecond)
	}
}

// bindViews resolves the shared words and buffers once, so the hot path
// indexes slices instead of computing offsets.
func (a *Arena) bindViews() {
	p := len(a.segs)
	a.posted = make([]*atomic.Uint64, p)
	a.waiters = make([]*atomic.Uint32, p)
	a.bells = make([]*atomic.Uint32, p)
	a.places = make([]*atomic.Uint64, p)
	a.fails = make([]*atomic.Uint64, p)
	a.aways = make([]*atomic.Uint64, p)
	for par := range 2 {
		a.flags[par] = make([]*atomic.Uint64, p)
		a.stamps[par] = make([][]byte, p)
		a.inline[par] = make([][]byte, p)
		a.halves[par] = make([][]byte, p)
	}
	g := a.geom
	for j, s := range a.segs {
		m := s.mem
		a.posted[j] = word64(m, hPosted)
		a.waiters[j] = word32(m, hWaiters)
		a.bells[j] = word32(m, hBell)
		a.places[j] = word64(m, hPlace)
		a.fails[j] = word64(m, hFailed)
		a.aways[j] = word64(m, hAway)
		for par := range 2 {
			off := g.inlineOffset(par)
			end := off + g.inlineSlotSize()
			a.flags[par][j] = word64(m, off)
			a.stamps[par][j] = m[off+flagBytes : off+flagBytes+stampBytes : off+flagBytes+stampBytes]
			a.inline[par][j] = m[off+flagBytes+stampBytes : end : end]
			h := g.halfOffset(par)
			a.halves[par][j] = m[h : h+g.halfSize() : h+g.halfSize()]
		}
	}
}

// Size is the number of ranks in the arena.
func (a *Arena) Size() int { return len(a.ranks) }

// Index is this rank's local index, its position in the sorted rank list.
func (a *Arena) Index() int { return a.index }

// Ranks returns the global ranks of the arena by local index.
func (a *Arena) Ranks() []int { return slices.Clone(a.ranks) }

// InlineBytes is the payload capacity of an inline slot.
func (a *Arena) InlineBytes() int { return a.geom.inlineBytes }

// HalfBytes is the capacity of one data half.
func (a *Arena) HalfBytes() int { return a.geom.halfSize() }

// Close releases the arena: an operation in progress fails with ErrClosed,
// peers see this rank as gone. Close is idempotent.
func (a *Arena) Close() error {
	a.once.Do(func() {
		a.closed.Store(true)
		a.life.RLock()
		for _, b := range a.bells {
			ring(b) // wake our own waiters sleeping on peers' bells
		}
		a.life.RUnlock()
		a.life.Lock()
		defer a.life.Unlock()
		for _, s := range a.segs {
			if err := s.release(); err != nil && a.closeErr == nil {
				a.closeErr = err
			}
		}
	})
	return a.closeErr
}
