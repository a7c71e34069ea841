package tcp

import "fmt"

// Large frame bodies are read with the socket's receive low-water mark
// (SO_RCVLOWAT) raised, so the kernel wakes the reader once per
// lowatMaxBytes that have arrived rather than once per packet. On a slow
// link with standard frames a 4 MiB body otherwise costs thousands of
// wake-ups and goroutine switches, CPU that the rank's compute needs.
//
// The mark never exceeds the bytes of the current frame still to come from
// the socket, so a reader never waits for bytes the peer has no reason to
// send; before any smaller read (headers, small bodies) it is back at 1, the
// kernel's default, so latency of small messages is unaffected.

const (
	// lowatMinBytes is the smallest remaining body read with a raised mark;
	// below it the read is short anyway and the extra system calls would
	// cost more than they save. It equals the read buffer so that such
	// reads bypass the buffer and go straight to the socket.
	lowatMinBytes = readBufferSize
	// lowatMaxBytes caps the mark: a wake-up per 256 KiB keeps the reader
	// copying while the rest arrives, and stays well below the receive
	// buffer the kernel grows for it (twice the mark).
	lowatMaxBytes = 256 << 10
)

// lowatFor is the mark to use before a read that needs remaining more
// bytes from the socket.
func lowatFor(remaining int) int {
	if remaining < lowatMinBytes {
		return 1
	}
	return min(remaining, lowatMaxBytes)
}

// rcvLowat is one connection's low-water mark as this side last set it.
// Only the connection's reader goroutine uses it.
type rcvLowat struct {
	set func(v int) error // nil: disabled (unsupported, or it failed once)
	cur int
}

// newRcvLowat returns the mark of a connection whose option setter is set
// (nil where the platform has none).
func newRcvLowat(set func(v int) error) rcvLowat {
	return rcvLowat{set: set, cur: 1}
}

// prepare sets the mark for a read that needs remaining more bytes from the
// socket. A failure to raise the mark only disables it for this connection
// (reads work without it); a failure to lower it is returned, since the
// socket might otherwise wait for bytes that never come.
func (r *rcvLowat) prepare(remaining int) error {
	if r.set == nil {
		return nil
	}
	want := lowatFor(remaining)
	if want == r.cur {
		return nil
	}
	if err := r.set(want); err != nil {
		if want > r.cur {
			r.set = nil
			return nil
		}
		return fmt.Errorf("lower SO_RCVLOWAT from %d to %d: %w", r.cur, want, err)
	}
	r.cur = want
	return nil
}
