package arena

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// Raw is the arena as code outside Go works on it: export's C fast lane
// runs one-epoch all_reduces (collectives/intra lane.go) itself. It
// follows the same protocol as Post, PostStamped and WaitAllInline:
//
//   - write the own payload (inline slot or data half) and stamp (three
//     little-endian words) of parity e%2, store e into the own inline flag,
//     then into the own posted word; if the own waiters word is non-zero,
//     add 1 to the own bell and wake its futex (not private: the sleepers
//     are peers);
//   - a peer's buffers of epoch e may be read once its inline flag is >= e.
//
// The caller must have the arena to itself while it works on it: between
// Go operations (Begin ... End), never during one; it advances the epoch
// word by one per epoch, as Next does. It must also be done with the
// shared memory before Close unmaps it: Close does not wait for code
// outside Go. Epoch and Closed point into the Arena, which the caller keeps
// from moving or being freed while C holds them (runtime.Pinner).
type Raw struct {
	Index, Size int // this rank's local index, the local ranks
	InlineBytes int // payload capacity of an inline slot
	// Spin is how long a wait spins before it yields (Config.SpinTime,
	// capped when the ranks outnumber the CPUs), Yield how long it then
	// yields between polls before it sleeps (Config.YieldTime).
	Spin, Yield time.Duration

	Epoch  *uint64      // the last epoch this rank started
	Closed *atomic.Bool // set by Close
	// Colocated counts the waits in a row that found a peer on this
	// rank's CPU (placement.go): a wait that stops spinning and finds every
	// peer elsewhere stores 0; one that finds a peer on its CPU calls
	// NotePlace instead.
	Colocated *atomic.Int32

	// By local index: the posted word (uint64), the waiters count and the
	// bell (uint32 futex words), and the place word (uint64, placement.go)
	// of each rank's segment.
	Posted, Waiters, Bells, Places []uintptr
	// By parity, then local index: the inline slot's flag (uint64), its
	// stamp (24 bytes) and its payload (InlineBytes), and the data half
	// (HalfBytes).
	Flags, Stamps, Inline, Half [2][]uintptr
	HalfBytes                   int
}

// Raw returns the addresses of the arena's shared words and buffers. They
// stay valid until Close.
func (a *Arena) Raw() Raw {
	p := len(a.segs)
	r := Raw{
		Index: a.index, Size: p, InlineBytes: a.geom.inlineBytes, HalfBytes: a.geom.halfSize(),
		Spin: a.spin, Yield: a.cfg.YieldTime,
		Epoch: &a.epoch, Closed: &a.closed, Colocated: &a.pl.colocated,
		Posted: make([]uintptr, p), Waiters: make([]uintptr, p), Bells: make([]uintptr, p), Places: make([]uintptr, p),
	}
	for j := range p {
		r.Posted[j] = uintptr(unsafe.Pointer(a.posted[j]))
		r.Waiters[j] = uintptr(unsafe.Pointer(a.waiters[j]))
		r.Bells[j] = uintptr(unsafe.Pointer(a.bells[j]))
		r.Places[j] = uintptr(unsafe.Pointer(a.places[j]))
	}
	for par := range 2 {
		r.Flags[par] = make([]uintptr, p)
		r.Stamps[par] = make([]uintptr, p)
		r.Inline[par] = make([]uintptr, p)
		r.Half[par] = make([]uintptr, p)
		for j := range p {
			r.Flags[par][j] = uintptr(unsafe.Pointer(a.flags[par][j]))
			r.Stamps[par][j] = uintptr(unsafe.Pointer(unsafe.SliceData(a.stamps[par][j])))
			r.Inline[par][j] = uintptr(unsafe.Pointer(unsafe.SliceData(a.inline[par][j])))
			r.Half[par][j] = uintptr(unsafe.Pointer(unsafe.SliceData(a.halves[par][j])))
		}
	}
	return r
}
