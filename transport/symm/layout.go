package symm

import (
	"sync/atomic"
	"unsafe"
)

// A segment is a header page, one signal line per rank of the window, and
// the data region, page aligned. Every shared word sits in a cache line of
// its own where it is written by another rank than its neighbours.
const (
	hMagic   = 0  // segMagic once the header is complete
	hVersion = 8  // segVersion
	hBytes   = 16 // size of the data region
	hNonce   = 24 // 16 bytes: the allocation's name, drawn by rank 0
	hRank    = 40 // owner's rank in the window
	hPid     = 48 // owner's process ID (for messages)
	hAttach  = 56 // local peers that mapped this segment
	hBell    = 64 // uint32 futex word: rung when a signal or barrier arrives
	hWaiters = 68 // uint32: sleepers on the bell
	hBarrier = 128
	hChannel = 192                           // line of collective channel c at hChannel + c*lineBytes (collective.go)
	hSignals = hChannel + Channels*lineBytes // signal line of rank r at hSignals + r*lineBytes

	lineBytes = 64
	pageBytes = 4096

	segMagic   = 0x6d6d79732d67686b // "khg-symm"
	segVersion = 2
)

// dataOffset is where the data region starts in a segment of a window of
// size ranks.
func dataOffset(size int) int { return roundUp(hSignals+size*lineBytes, pageBytes) }

// segmentSize is the file size of a segment: the data region rounded up to
// a page.
func segmentSize(size, bytes int) int { return dataOffset(size) + roundUp(bytes, pageBytes) }

func roundUp(n, to int) int { return (n + to - 1) / to * to }

func word64(m []byte, off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&m[off])) }
func word32(m []byte, off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&m[off])) }
