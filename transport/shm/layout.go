//go:build linux

package shm

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Segment layout. Each rank owns one segment: a header page, then its inbox,
// one ring per other rank of the host. A ring has one writer (the sender)
// and one reader (the owner); every shared word is touched with sync/atomic,
// and words written by different processes sit in different cache lines.
//
//	header (one page)
//	  line 0  static, written once before magic: magic, version, nLocal,
//	          localIdx, slots, slotSize, pid, pid namespace
//	  line 1  attach count (every process that mapped the segment adds 1)
//	  line 2  closed flag, heartbeat (owner); refused: set by a peer that
//	          found a segment proving another job secret (its rank + 1)
//	  line 3  doorbell: waiters (owner), bell (futex word, bumped by senders)
//	  line 4  the owner's proof of the job secret (Config.Proof), written
//	          once before magic
//	ring, per sender
//	  line 0  written by the receiver: tail, spaceSeq (futex word),
//	          cmaRefused, cmaNack
//	  line 1  written by the sender: spaceWaiters, aborted
//	  slots   each a 64-byte header line and slotSize bytes of body
//
// A slot's header line holds the sequence flag (position+1, stored last),
// the tag, the message length and kind, and either 40 bytes of inline data
// (so a tiny message is one cache line) or, for a single-copy transfer, the
// sender's buffer address.
const (
	lineSize   = 64
	pageSize   = 4096
	headerSize = pageSize

	segMagic   = 0x6f672d6c63636868 // "hhccl-go", stored last: the segment is ready
	segVersion = 1

	// header fields
	hMagic     = 0
	hVersion   = 8
	hNLocal    = 16
	hLocalIdx  = 24
	hSlots     = 32
	hSlotSize  = 40
	hPid       = 48
	hPidNS     = 56
	hAttach    = 1 * lineSize
	hClosed    = 2 * lineSize
	hHeartbeat = 2*lineSize + 8
	hRefused   = 2*lineSize + 16
	hWaiters   = 3 * lineSize
	hBell      = 3*lineSize + 4
	hProof     = 4 * lineSize

	// ring control fields, relative to the ring
	rTail         = 0
	rSpaceSeq     = 8
	rCMARefused   = 12
	rCMANack      = 16 // position+1 of the last single-copy offer answered "use the ring"
	rSpaceWaiters = lineSize
	rAborted      = lineSize + 4
	ringCtrlSize  = 2 * lineSize

	// slot header fields, relative to the slot
	sFlag     = 0
	sTag      = 8
	sMeta     = 16 // length | kind<<56
	sInline   = 24 // inline payload, or the sender's buffer address
	inlineMax = lineSize - sInline

	metaLenMask = 1<<56 - 1
	kindShift   = 56
	kindEager   = 0 // payload inline or in the slot bodies
	kindCMA     = 1 // receiver reads the sender's buffer with process_vm_readv
)

// geometry is what every rank of a host must agree on to find the rings.
type geometry struct {
	nLocal   int // ranks on the host
	slots    int
	slotSize int
}

func (g geometry) slotStride() int { return lineSize + g.slotSize }
func (g geometry) ringSize() int   { return ringCtrlSize + g.slots*g.slotStride() }

// segmentSize is the size of one rank's segment, a whole number of pages.
func (g geometry) segmentSize() int {
	n := headerSize + (g.nLocal-1)*g.ringSize()
	return (n + pageSize - 1) &^ (pageSize - 1)
}

// The rings of a rank's segment (one per other rank of the host) share
// segmentBudget when Slots is left to the default, down to minDefaultSlots
// per ring: with 64 slots of 64 KiB, 128 ranks on one host would need
// 533 MB of /dev/shm each (68 GB in all).
const (
	segmentBudget   = 32 << 20
	minDefaultSlots = 4
)

// defaultSlotsFor is the default ring length on a host of nLocal ranks
// whose slots carry slotSize bytes (0: the default).
func defaultSlotsFor(nLocal, slotSize int) int {
	if slotSize == 0 {
		slotSize = defaultSlotSize
	}
	if nLocal < 2 {
		return defaultSlots
	}
	fit := segmentBudget / ((nLocal - 1) * (lineSize + slotSize))
	return min(defaultSlots, max(minDefaultSlots, fit))
}

// ringOffset is where, in the segment of the rank with local index owner,
// the ring from the rank with local index sender starts.
func (g geometry) ringOffset(owner, sender int) int {
	i := sender
	if sender > owner {
		i--
	}
	return headerSize + i*g.ringSize()
}

func u64At(mem []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&mem[off]))
}

func u32At(mem []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off]))
}

// header is a view of a segment's header page.
type header struct{ mem []byte }

func (h header) magic() *atomic.Uint64     { return u64At(h.mem, hMagic) }
func (h header) attach() *atomic.Uint64    { return u64At(h.mem, hAttach) }
func (h header) closed() *atomic.Uint32    { return u32At(h.mem, hClosed) }
func (h header) heartbeat() *atomic.Uint64 { return u64At(h.mem, hHeartbeat) }
func (h header) refused() *atomic.Uint32   { return u32At(h.mem, hRefused) }
func (h header) waiters() *atomic.Uint32   { return u32At(h.mem, hWaiters) }
func (h header) bell() *atomic.Uint32      { return u32At(h.mem, hBell) }

func (h header) proof() []byte { return h.mem[hProof : hProof+proofSize] }

func (h header) field(off int) uint64 { return binary.LittleEndian.Uint64(h.mem[off:]) }
func (h header) setField(off int, v uint64) {
	binary.LittleEndian.PutUint64(h.mem[off:], v)
}

// ring is a view of one ring inside a mapped segment.
type ring struct {
	mem      []byte // the ring's bytes
	slots    int
	slotSize int
}

func newRing(seg []byte, off int, g geometry) ring {
	return ring{mem: seg[off : off+g.ringSize() : off+g.ringSize()], slots: g.slots, slotSize: g.slotSize}
}

func (r ring) tail() *atomic.Uint64         { return u64At(r.mem, rTail) }
func (r ring) spaceSeq() *atomic.Uint32     { return u32At(r.mem, rSpaceSeq) }
func (r ring) cmaRefused() *atomic.Uint32   { return u32At(r.mem, rCMARefused) }
func (r ring) cmaNack() *atomic.Uint64      { return u64At(r.mem, rCMANack) }
func (r ring) spaceWaiters() *atomic.Uint32 { return u32At(r.mem, rSpaceWaiters) }
func (r ring) aborted() *atomic.Uint32      { return u32At(r.mem, rAborted) }

// slot returns the bytes of the slot at ring position pos: its header line
// followed by its body.
func (r ring) slot(pos uint64) []byte {
	stride := lineSize + r.slotSize
	off := ringCtrlSize + int(pos%uint64(r.slots))*stride
	return r.mem[off : off+stride : off+stride]
}

func slotFlag(s []byte) *atomic.Uint64 { return u64At(s, sFlag) }
func slotBody(s []byte) []byte         { return s[lineSize:] }
