package match

import (
	"math/bits"
	"sync"
)

// Size classes of pooled storage for unexpected messages: powers of two
// from 2^minClassShift to 2^maxClassShift (64 MiB) bytes, so that large
// messages that arrive before their Recv do not pay for zeroed memory each
// time. Larger ones get fresh memory. sync.Pool lets the GC reclaim idle
// buffers.
const (
	minClassShift = 6
	maxClassShift = 26
)

// storagePool recycles the buffers of unexpected messages.
type storagePool struct {
	classes [maxClassShift - minClassShift + 1]sync.Pool
}

// class returns the pool index for n bytes, or -1 if n is too large.
func class(n int) int {
	if n > 1<<maxClassShift {
		return -1
	}
	shift := max(bits.Len(uint(n-1)), minClassShift)
	if n <= 1 {
		shift = minClassShift
	}
	return shift - minClassShift
}

// get returns a buffer of at least n bytes.
func (p *storagePool) get(n int) *[]byte {
	c := class(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if v := p.classes[c].Get(); v != nil {
		return v.(*[]byte)
	}
	b := make([]byte, 1<<(c+minClassShift))
	return &b
}

// put recycles a buffer from get. nil is ignored.
func (p *storagePool) put(b *[]byte) {
	if b == nil {
		return
	}
	if c := class(cap(*b)); c >= 0 && cap(*b) == 1<<(c+minClassShift) {
		*b = (*b)[:cap(*b)]
		p.classes[c].Put(b)
	}
}
