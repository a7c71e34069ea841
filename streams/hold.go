package streams

import "sync/atomic"

// Holding a stream. A caller that runs an operation of its own on the
// calling thread, outside the scheduler (pgbackend's fast lane for small
// blocking collectives), holds the stream meanwhile: the scheduler then
// starts nothing on it, and what is queued in the meantime starts once the
// holder lets go. A stream can be held only while it is idle (nothing
// queued or running), so a held operation never overtakes one queued
// before it.
//
// The state is one word, so that code outside Go (the C fast lane of
// package export) can take and release it too: holdHeld is the holder's
// bit, holdBusy the scheduler's. The scheduler sets holdBusy when an
// operation is queued and clears it when the stream has nothing left,
// both under its mutex; a holder takes the word from 0 to holdHeld, and
// on release kicks the scheduler when it finds holdBusy set. Both sides
// change the word by atomic read-modify-writes, so whichever comes second
// sees the other: an operation queued during the hold is never left
// waiting.
const (
	holdHeld uint32 = 1 << 0 // a holder runs an operation of its own
	holdBusy uint32 = 1 << 1 // operations are queued or running
)

// TryHold holds the stream if it is idle and not held, and reports whether
// it did. The caller must Release it.
func (s *Stream) TryHold() bool {
	return s.hold.CompareAndSwap(0, holdHeld)
}

// Release ends a hold taken by TryHold and starts what was queued
// meanwhile.
func (s *Stream) Release() {
	if s.hold.And(^holdHeld)&holdBusy != 0 {
		s.sched.kick()
	}
}

// Kick starts what was queued while the stream was held, for a holder
// outside Go that released the word itself (HoldWord) and found holdBusy
// set.
func (s *Stream) Kick() { s.sched.kick() }

// HoldWord is the stream's hold state, for a holder outside Go: it takes
// the word from 0 to 1 (held) and releases it by clearing that bit; a
// value of 2 or 3 means the scheduler has operations queued or running,
// and when the bit it clears leaves 2 behind, it must call Kick. The word
// lives as long as the stream; a caller that hands its address to C keeps
// the stream's memory from moving (runtime.Pinner).
func (s *Stream) HoldWord() *atomic.Uint32 { return &s.hold }

// Held reports whether a holder has the stream.
func (s *Stream) Held() bool { return s.hold.Load()&holdHeld != 0 }

// heldLocked reports whether a holder has the stream. The caller holds
// the scheduler's mutex.
func (s *Stream) heldLocked() bool { return s.hold.Load()&holdHeld != 0 }
