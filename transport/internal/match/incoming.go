package match

// Incoming is one message whose bytes are arriving. Writers take a range with
// Acquire, fill it, and give it back with Release; ranges from several
// goroutines may land concurrently as long as they do not overlap.
type Incoming struct {
	box  *Box
	peer int
	n    int
	seq  uint64 // arrival order in the box, for receives from any peer

	// Guarded by box.mu.
	target    []byte   // where bytes land: a Recv's buffer, own storage, or nil (discard)
	own       bool     // target is storage of this Incoming (no Recv yet)
	store     *[]byte  // pooled storage behind target while own
	req       *request // the Recv whose buffer is target
	waiter    *request // a Recv waiting for this out-of-order message to complete
	landed    int      // bytes released so far
	writers   int      // Acquires not yet Released
	active    []Interrupter
	activeArr [4]Interrupter
	spans     []span // the byte ranges landed so far, sorted and merged
	spanArr   [4]span
	spansLost bool // too many ranges to track: a late Recv waits for the end
	switching bool // a Recv is taking over; Acquire waits
	complete  bool
	failed    error
}

// Len is the message length in bytes.
func (in *Incoming) Len() int { return in.n }

// Acquire returns the slice where bytes [off, off+cnt) of the message land,
// or nil when they are to be discarded (the Recv gave up or the message was
// refused). w, if not nil, is interrupted when the receiver needs the write
// to stop early. Every Acquire must be paired with one Release.
func (in *Incoming) Acquire(off, cnt int, w Interrupter) []byte {
	b := in.box
	b.mu.Lock()
	defer b.mu.Unlock()
	for in.switching {
		b.idle.Wait()
	}
	in.writers++
	if w != nil {
		in.active = append(in.active, w)
	}
	if in.target == nil {
		return nil
	}
	return in.target[off : off+cnt : off+cnt]
}

// Release reports that bytes [off, off+cnt) of the range taken by the
// matching Acquire(off, ...) landed; cnt may be short after an interruption
// (Acquire the rest again).
func (in *Incoming) Release(off, cnt int, w Interrupter) {
	b := in.box
	b.mu.Lock()
	defer b.mu.Unlock()
	in.writers--
	if w != nil {
		for i, a := range in.active {
			if a == w {
				last := len(in.active) - 1
				in.active[i] = in.active[last]
				in.active[last] = nil
				in.active = in.active[:last]
				break
			}
		}
	}
	in.landed += cnt
	if cnt > 0 && !in.spansLost {
		in.addSpan(span{off, off + cnt})
	}
	if in.writers == 0 && (in.target == nil || in.switching) {
		b.idle.Broadcast()
	}
	if in.landed == in.n && in.failed == nil && !in.complete {
		bound := in.req != nil
		in.finish()
		delete(b.landing, in)
		if bound {
			// Landed in its Recv's buffer: nobody needs it any more.
			b.freeIncoming(in)
		}
	}
}

// bind makes req's buffer the target. Called with box.mu held.
func (in *Incoming) bind(req *request) {
	in.req = req
	in.target = req.buf
	req.in = in
}

// finish marks the message complete and wakes its Recv. Called with box.mu
// held.
func (in *Incoming) finish() {
	in.complete = true
	if in.req != nil {
		in.req.fire(nil)
		in.req = nil
	}
	if in.waiter != nil {
		in.waiter.fire(nil)
		in.waiter = nil
	}
}

// interruptWriters asks every writer to let go. Called with box.mu held.
func (in *Incoming) interruptWriters() {
	for _, w := range in.active {
		w.Interrupt()
	}
}

// span is a landed byte range [from, to).
type span struct{ from, to int }

// maxSpans bounds the ranges tracked per message: enough for one range per
// stream of a striped message.
const maxSpans = 256

// addSpan records a landed range, merging it with its neighbours. Called
// with box.mu held.
func (in *Incoming) addSpan(s span) {
	i := 0
	for i < len(in.spans) && in.spans[i].to < s.from {
		i++
	}
	if i < len(in.spans) && in.spans[i].from <= s.to {
		// Touches spans[i] (ranges never overlap): merge, then maybe with the next.
		in.spans[i].from = min(in.spans[i].from, s.from)
		in.spans[i].to = max(in.spans[i].to, s.to)
		if i+1 < len(in.spans) && in.spans[i+1].from <= in.spans[i].to {
			in.spans[i].to = max(in.spans[i].to, in.spans[i+1].to)
			in.spans = append(in.spans[:i+1], in.spans[i+2:]...)
		}
		return
	}
	if len(in.spans) >= maxSpans {
		in.spansLost = true
		return
	}
	in.spans = append(in.spans, span{})
	copy(in.spans[i+1:], in.spans[i:])
	in.spans[i] = s
}
