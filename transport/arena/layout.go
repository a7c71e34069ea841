package arena

import (
	"sync/atomic"
	"unsafe"
)

// Segment layout. Every word that two processes touch is accessed with
// sync/atomic, and words written by different ranks sit in different cache
// lines (the attach counter and the waiter count are the exceptions: both
// change only during setup or before a sleep, never on the fast path).
//
//	header page
//	  line 0  static, written once before magic: magic, version, nLocal,
//	          index, inlineBytes, dataBytes, job hash, pid (for messages)
//	  line 1  attach count: every peer that mapped the segment adds 1
//	  line 2  posted (the owner's last posted epoch), waiters (peers that
//	          may sleep on the bell), bell (futex word, bumped to wake them),
//	          place (the CPU the owner last waited on, see placement.go)
//	  line 3  failed (1 once the owner failed an operation, 0 before), the
//	          length of the failure message, away (how many phases the
//	          owner has under way outside the arena, see failure.go)
//	  lines 4-11  the failure message (failure.go), written before failed
//	inline slots, parity 0 and 1: each a flag word (the epoch of the data),
//	  the stamp of the operation that epoch began (three words, see
//	  stamp.go), then InlineBytes of payload, in whole cache lines
//	data halves, parity 0 and 1: DataBytes/2 each, page aligned
const (
	lineSize   = 64
	pageSize   = 4096
	flagBytes  = 8  // the flag word at the start of an inline slot
	stampBytes = 24 // the Stamp after it (three words), in the same cache line

	segMagic   = 0x616e657261636368 // "hccarena", stored last: the header is ready
	segVersion = 4                  // 2: stamps in the inline slots; 3: place word; 4: failure record

	hMagic       = 0
	hVersion     = 8
	hNLocal      = 16
	hIndex       = 24
	hInlineBytes = 32
	hDataBytes   = 40
	hJobHash     = 48
	hPid         = 56
	hAttach      = 1 * lineSize
	hPosted      = 2 * lineSize
	hWaiters     = 2*lineSize + 8
	hBell        = 2*lineSize + 12
	hPlace       = 2*lineSize + 16
	hFailed      = 3 * lineSize
	hFailLen     = 3*lineSize + 8
	hAway        = 3*lineSize + 16
	hFailMsg     = 4 * lineSize
	failMsgBytes = 8 * lineSize
	headerSize   = pageSize
)

// geometry locates the parts of a segment; every rank of a host computes the
// same one from the shared Config.
type geometry struct {
	inlineBytes int // payload of one inline slot
	dataBytes   int // both halves
}

func (g geometry) inlineSlotSize() int { return flagBytes + stampBytes + g.inlineBytes }

// inlineOffset is where the inline slot of a parity starts.
func (g geometry) inlineOffset(parity int) int { return headerSize + parity*g.inlineSlotSize() }

// halfOffset is where the data half of a parity starts.
func (g geometry) halfOffset(parity int) int {
	return roundUp(g.inlineOffset(2), pageSize) + parity*g.halfSize()
}

func (g geometry) halfSize() int { return g.dataBytes / 2 }

// segmentSize is the size of one rank's segment file.
func (g geometry) segmentSize() int { return g.halfOffset(2) }

// word64 and word32 view a word of a mapping as an atomic; off must be
// aligned.
func word64(mem []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&mem[off]))
}

func word32(mem []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off]))
}
